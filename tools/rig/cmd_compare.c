/* cmd_compare.c — `rig compare MEASURED.h5 PREDICTED.h5` (core/results/compare.h): step
 * times and serving metrics of a prediction against a measured run, as tables.
 * Exit status: 0 compared, 1 a file that cannot be read, 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include "core/harness/results/compare.h"
#include "tools/rig/commands.h"

static void rig__compare_usage(FILE *out)
{
    fprintf(out,
            "usage: rig compare MEASURED.h5 PREDICTED.h5\n\n"
            "Compares two results files (rig run / rig bench serving runs): steps paired by\n"
            "index while phase, batch size and tokens agree, their duration errors by phase\n"
            "and batch size (median and p90 of |error|, mean signed error), the median step\n"
            "of every group, and TTFT / TPOT / ITL / E2E percentiles, duration, throughput\n"
            "and device idle side by side. Error = (predicted - measured) / measured.\n"
            "Plot: python3 tools/report/report.py --compare MEASURED.h5 PREDICTED.h5\n");
}

int rig_cmd_compare(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int count = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            rig__compare_usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' || count == 2) {
            rig__compare_usage(stderr);
            return 2;
        }
        paths[count++] = argv[i];
    }
    if (count != 2) {
        rig__compare_usage(stderr);
        return 2;
    }
    struct rig_compare_run runs[2];
    char error[512];
    for (int i = 0; i < 2; i++) {
        if (rig_compare_read(paths[i], &runs[i], error, sizeof error) != RIG_OK) {
            fprintf(stderr, "rig compare: %s\n", error);
            if (i == 1) rig_compare_run_free(&runs[0]);
            return 1;
        }
    }
    struct rig_compare_report report;
    enum rig_status status = rig_compare_runs(&runs[0], &runs[1], &report);
    if (status == RIG_OK) rig_compare_print(&runs[0], &runs[1], &report, stdout);
    else fprintf(stderr, "rig compare: %s\n", rig_status_message(status));
    rig_compare_run_free(&runs[0]);
    rig_compare_run_free(&runs[1]);
    return status == RIG_OK ? 0 : 1;
}
