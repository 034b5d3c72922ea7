/* startup.h — where a process's start-up time goes, printed when asked.
 *
 * Cold start (issue 18: `time rig generate`, dummy weights, graphs captured) is a sum of
 * phases in different layers: the backend's context, the weights, the KV cache, the decode
 * graphs, the tokenizer. With RIG_START_TRACE=1 in the environment every rig_startup_mark
 * prints one line to stderr,
 *     rig: start-up  +0.412 s  =  1.038 s  weights loaded (rank 0)
 * the wall time since the previous mark and since the process's first mark. Without the
 * variable a mark costs one relaxed load. Wall time only: nothing here reaches a result
 * file, so the simulator's outputs stay a function of the scenario and seed.
 *
 * Thread safety: marks may come from any thread (ranks mark their own phases); one mutex
 * orders the lines and the "previous mark".
 */
#ifndef RIG_HAL_STARTUP_H
#define RIG_HAL_STARTUP_H

/* Prints `what` (printf format) with the times above when RIG_START_TRACE is set and not
 * "0"; the first call of the process sets the zero. */
void rig_startup_mark(const char *what, ...) __attribute__((format(printf, 1, 2)));

#endif
