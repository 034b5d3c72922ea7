/* test_swarm_plant.c — the swarm's checks bite: planted bugs are found (issue 6, item 5).
 *
 * Each planted bug (core/harness/swarm/plant.h, switched on through rig_debug_plant) must make the
 * swarm fail within a stated number of seeds, with the expected kind of failure, and the same
 * seed must pass with the plant off (so the failure is the plant's). Seeds run in a forked
 * child (an assertion in the engine is a CRASH verdict, its message on stderr). Measured
 * first failing seeds (faults on, from seed 1): skip-unlock 3, free-shared-page 3,
 * release-in-flight 6, admit-free-only 7 (liveness: a deadlock on a full cache); of seeds
 * 1..200, 121, 47, 39 and 38 fail. The bounds below leave room for the engine to change.
 * Also: shrinking a planted failure keeps it failing with no more requests than it started
 * with, and the shrunk case still writes a scenario that loads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/harness/scenario/scenario.h"
#include "core/harness/swarm/plant.h"
#include "core/harness/swarm/swarm.h"
#include "hal/backends.h"

/* The first seed in [1, limit] that fails with `plant` on; 0 when none does. */
static uint64_t rig__first_failing(uint32_t plant, uint64_t limit, struct rig_swarm_case *c,
                                   struct rig_swarm_result *r)
{
    rig_debug_plant = plant;
    uint64_t found = 0;
    for (uint64_t seed = 1; seed <= limit && found == 0; seed++) {
        rig_swarm_draw(seed, true, c);
        if (rig_swarm_check(c, false, true, r) != RIG_SWARM_PASS) found = seed;
    }
    rig_debug_plant = 0;
    return found;
}

static void rig__expect_found(uint32_t plant, uint64_t limit, bool crash_allowed)
{
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    struct rig_swarm_result r;
    uint64_t seed = rig__first_failing(plant, limit, c, &r);
    print_message("plant %#x: first failing seed %llu (%s: %s)\n", plant,
                  (unsigned long long)seed, rig_swarm_verdict_name(r.verdict), r.message);
    assert_true(seed >= 1 && seed <= limit);
    if (crash_allowed)
        assert_true(r.verdict == RIG_SWARM_INVARIANT || r.verdict == RIG_SWARM_CRASH ||
                    r.verdict == RIG_SWARM_LIFECYCLE || r.verdict == RIG_SWARM_CONSERVATION);
    else
        assert_int_equal(r.verdict, RIG_SWARM_INVARIANT);
    /* The same seed without the plant passes. */
    assert_int_equal(rig_swarm_check(c, false, true, &r), RIG_SWARM_PASS);
    free(c);
}

/* A finished request's prefix lock never released: the checker's ref-count audit. */
static void test_plant_skip_unlock(void **state)
{
    (void)state;
    rig__expect_found(RIG_PLANT_SKIP_UNLOCK, 20, false);
}

/* A page the tree still holds freed instead of the duplicate: "cached in the tree and free". */
static void test_plant_free_shared_page(void **state)
{
    (void)state;
    rig__expect_found(RIG_PLANT_FREE_SHARED_PAGE, 40, true);
}

/* A request released while an in-flight batch still includes it (overlap). */
static void test_plant_release_inflight(void **state)
{
    (void)state;
    rig__expect_found(RIG_PLANT_RELEASE_INFLIGHT, 60, true);
}

/* Admission that forgets evictable slots: a cache full of cached prefixes blocks forever. */
static void test_plant_admit_free_only(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    struct rig_swarm_result r;
    uint64_t seed = rig__first_failing(RIG_PLANT_ADMIT_FREE_ONLY, 40, c, &r);
    print_message("plant %#x: first failing seed %llu (%s: %s)\n", RIG_PLANT_ADMIT_FREE_ONLY,
                  (unsigned long long)seed, rig_swarm_verdict_name(r.verdict), r.message);
    assert_true(seed >= 1 && seed <= 40);
    assert_int_equal(r.verdict, RIG_SWARM_LIVENESS);
    assert_int_equal(rig_swarm_check(c, false, true, &r), RIG_SWARM_PASS);
    free(c);
}

static void test_shrink_planted_failure(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    struct rig_swarm_result r;
    uint64_t seed = rig__first_failing(RIG_PLANT_FREE_SHARED_PAGE, 40, c, &r);
    assert_true(seed > 0);
    enum rig_swarm_verdict verdict = r.verdict;
    int32_t before = c->request_count;
    rig_debug_plant = RIG_PLANT_FREE_SHARED_PAGE;
    int32_t runs = rig_swarm_shrink(c, verdict, false, true, 100);
    assert_true(runs >= 1 && runs <= 100);
    assert_true(c->request_count >= 1 && c->request_count <= before);
    assert_int_equal(rig_swarm_check(c, false, true, &r), verdict);
    rig_debug_plant = 0;
    print_message("shrunk seed %llu: %d -> %d requests in %d runs\n", (unsigned long long)seed,
                  before, c->request_count, runs);
    char path[] = "/tmp/rig-shrunk-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rig_swarm_write_scenario(c, path), RIG_OK);
    struct rig_scenario s;
    char error[RIG_SCENARIO_ERROR_MAX];
    assert_int_equal(rig_scenario_load(path, NULL, 0, &s, error, sizeof error), RIG_OK);
    assert_int_equal(s.request_count, c->request_count);
    rig_scenario_free(&s);
    unlink(path);
    char model[sizeof path + 16];
    snprintf(model, sizeof model, "%s.model.json", path);
    unlink(model); /* written beside it when the vocabulary is not the preset's */
    free(c);
}

int main(void)
{
    rig_backends_register();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plant_skip_unlock),
        cmocka_unit_test(test_plant_free_shared_page),
        cmocka_unit_test(test_plant_release_inflight),
        cmocka_unit_test(test_plant_admit_free_only),
        cmocka_unit_test(test_shrink_planted_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
