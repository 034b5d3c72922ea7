/* host_model.c — the engine's host time model; see host_model.h. */
#include "hal/host_model.h"

#include <math.h>

#include "hal/status.h"

const char *const rig_host_model_keys[RIG_HOST_TERMS][RIG_HOST_FACTORS] = {
    [RIG_HOST_SCHEDULE] = {"host_schedule_ns", "host_schedule_per_request_ns",
                           "host_schedule_per_token_ns", "host_schedule_per_new_ns",
                           "host_schedule_per_finished_ns"},
    [RIG_HOST_PREPARE] = {"host_prepare_ns", "host_prepare_per_request_ns",
                          "host_prepare_per_token_ns", "host_prepare_per_new_ns",
                          "host_prepare_per_finished_ns"},
    [RIG_HOST_PROCESS] = {"host_process_ns", "host_process_per_request_ns",
                          "host_process_per_token_ns", "host_process_per_new_ns",
                          "host_process_per_finished_ns"},
    [RIG_HOST_LOOP] = {"host_loop_ns", "host_loop_per_request_ns", "host_loop_per_token_ns",
                       "host_loop_per_new_ns", "host_loop_per_finished_ns"},
};

int64_t rig_host_model_ns(const struct rig_host_model *model, enum rig_host_term term,
                          const int64_t counts[RIG_HOST_FACTORS])
{
    RIG_ASSERT(model != NULL && counts != NULL);
    RIG_ASSERT(term >= 0 && term < RIG_HOST_TERMS);
    double ns = 0.0;
    for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
        RIG_ASSERT(counts[f] >= 0);
        ns += model->ns[term][f] * (double)counts[f];
    }
    RIG_ASSERT(isfinite(ns) && ns >= 0.0);
    return llround(ns);
}
