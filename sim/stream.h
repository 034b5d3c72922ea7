/* stream.h — the simulator's stream, event, copy, fill and clock slots of the backend table
 * (hal_impl.h). Semantics on the virtual clock (sim/clock.h):
 *   event record        the event takes the stream's ready time;
 *   stream wait event   the stream's ready time rises to the event's time;
 *   stream/event sync   the host timeline advances to the stream's / event's time;
 *   event query         complete when the event's time is not after the host's;
 *   elapsed             difference of the two events' times.
 * Copies and fills run their bytes at issue (none when a side is phantom) and take their
 * modelled time: copies on the copy engine, fills on the compute engine (a dummy-weight fill
 * is a fill whose values hal/dummy.h computes on the host). A copy from or to host memory
 * that is not pinned (rig_hal_host_is_pinned) also makes the host wait until it ends, as
 * CUDA's staged pageable copies do.
 * Threads: those of the device (hal.h).
 */
#ifndef RIG_SIM_STREAM_H
#define RIG_SIM_STREAM_H

#include "hal/hal_impl.h"

enum rig_status rig_sim_stream_create(struct rig_device *device, void **context);
void rig_sim_stream_destroy(struct rig_stream *stream);
enum rig_status rig_sim_stream_synchronize(struct rig_stream *stream);
enum rig_status rig_sim_event_create(struct rig_device *device, void **context);
void rig_sim_event_destroy(struct rig_event *event);
enum rig_status rig_sim_event_record(struct rig_event *event, struct rig_stream *stream);
enum rig_status rig_sim_stream_wait_event(struct rig_stream *stream, struct rig_event *event);
enum rig_status rig_sim_event_synchronize(struct rig_event *event);
enum rig_status rig_sim_event_query(struct rig_event *event, bool *complete);
enum rig_status rig_sim_event_elapsed_ns(const struct rig_event *start, const struct rig_event *end,
                                         int64_t *ns);
enum rig_status rig_sim_memcpy_async(struct rig_stream *stream, void *dst, const void *src,
                                     size_t bytes, enum rig_copy_kind kind);
enum rig_status rig_sim_fill_u32(struct rig_stream *stream, void *dst, uint32_t value,
                                 size_t count);
enum rig_status rig_sim_fill_dummy_bf16(struct rig_stream *stream, void *dst,
                                        const struct rig_dummy_piece *piece);
int64_t rig_sim_now_ns(struct rig_device *device);
void rig_sim_host_work_ns(struct rig_device *device, int64_t ns);
void rig_sim_host_wait_until_ns(struct rig_device *device, int64_t t_ns);

#endif /* RIG_SIM_STREAM_H */
