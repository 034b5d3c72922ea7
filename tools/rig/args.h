/* args.h — checked parsing of the numbers given on the command line, for every subcommand.
 *
 * Each function parses the whole of `text` as one number of its kind and checks it against
 * an inclusive range: no leading or trailing spaces, no '+', a '-' only where the range
 * allows negatives, decimal digits only for integers (so "1e3", "0x10", "12abc" and "" are
 * refused), and for reals a finite value ("nan", "inf" and overflowing literals are
 * refused). Integers are converted exactly: a seed of 20 digits keeps all of them, which a
 * detour through double would not.
 *
 * Failure: RIG_E_PARSE (not a number of that kind) or RIG_E_RANGE (outside [lo, hi]), with a
 * message naming the text and what was expected written to msg; *out is left unchanged.
 * Threads: reentrant.
 */
#ifndef RIG_ARGS_H
#define RIG_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"

enum rig_status rig_args_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out,
                             char *msg, size_t msg_len);
enum rig_status rig_args_i64(const char *text, int64_t lo, int64_t hi, int64_t *out, char *msg,
                             size_t msg_len);
/* rig_args_i64 narrowed to int32_t (lo and hi are int32_t). */
enum rig_status rig_args_i32(const char *text, int32_t lo, int32_t hi, int32_t *out, char *msg,
                             size_t msg_len);
enum rig_status rig_args_f64(const char *text, double lo, double hi, double *out, char *msg,
                             size_t msg_len);
/* A comma-separated list of integers in [lo, hi] ("1,2 , 3": spaces may surround an item):
 * at least one and at most `capacity`, written to out[0, *count). RIG_E_PARSE for an empty
 * item, RIG_E_CAPACITY when there are more; on any error *count is unchanged (out may hold
 * some of the numbers). */
enum rig_status rig_args_i32_list(const char *text, int32_t lo, int32_t hi, int32_t *out,
                                  int32_t capacity, int32_t *count, char *msg, size_t msg_len);
/* The same for finite reals in [lo, hi]. */
enum rig_status rig_args_f64_list(const char *text, double lo, double hi, double *out,
                                  int32_t capacity, int32_t *count, char *msg, size_t msg_len);

/* A subcommand's flag value: the parsers above, reporting a failure on stderr as
 * "rig <command>: <option>: <message>" (e.g. "rig serve: --port: '0x10' is not a whole
 * number from 1 to 65535") and returning false; true with *out set otherwise. For a real
 * whose hi is infinite, "inf" is taken too (as bench serve's --request-rate does). */
bool rig_args_flag_i64(const char *command, const char *option, const char *text, int64_t lo,
                       int64_t hi, int64_t *out);
bool rig_args_flag_i32(const char *command, const char *option, const char *text, int32_t lo,
                       int32_t hi, int32_t *out);
bool rig_args_flag_u64(const char *command, const char *option, const char *text, uint64_t lo,
                       uint64_t hi, uint64_t *out);
bool rig_args_flag_f64(const char *command, const char *option, const char *text, double lo,
                       double hi, double *out);

/* Splitting text into items for the parsers above: skips any of `separators` at *cursor,
 * copies the item up to the next separator into item (at most item_len − 1 characters: a
 * longer item is cut, and no number is that long) and moves *cursor past it. False when only
 * separators were left. */
bool rig_args_next_item(const char **cursor, const char *separators, char *item,
                        size_t item_len);

#endif /* RIG_ARGS_H */
