/* test_tokenizer_cli.c — `rig tokenize` and `rig detokenize` as a user runs them.
 *
 * Runs the built `rig` binary (next to this test's directory: build/rig) through popen and
 * checks its standard output and exit status: ids of a text and of standard input, --tokens,
 * --chat with the model's template (as apply_chat_template(tokenize=True) would give), a JSON
 * conversation, detokenize whole and streamed (pieces as JSON strings), --bench, and usage and
 * input errors (exit 2 and 1). Skipped (exit 77) when the binary is not where the build puts it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/test_support.h"

#define QWEN3 RIG_TEST_DATA_DIR "/tokenizer/qwen3"

static char rig_path[PATH_MAX];

/* Runs `rig ARGS` (a shell fragment), returns its exit status and stdout in `out`. */
static int run(const char *args, char *out, size_t capacity)
{
    char command[8192];
    snprintf(command, sizeof command, "'%s' %s 2>/dev/null", rig_path, args);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    size_t len = fread(out, 1, capacity - 1, pipe);
    out[len] = '\0';
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_tokenize(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " 'Hello, world! 你好'", out, sizeof out),
                     0);
    assert_string_equal(out, "9707 11 1879 0 220 108386\n");
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " - < /dev/null", out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --tokens 'it'\"'\"'s'", out, sizeof out),
                     0);
    assert_string_equal(out, "275\tit\n594\t's\n");
}

static void test_chat(void **state)
{
    (void)state;
    char out[4096];
    /* <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n */
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --chat hi", out, sizeof out), 0);
    assert_string_equal(out, "151644 872 198 6023 151645 198 151644 77091 198\n");
    /* ... plus <think>\n\n</think>\n\n when thinking is off. */
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --chat --no-thinking hi", out, sizeof out),
                     0);
    assert_string_equal(out, "151644 872 198 6023 151645 198 151644 77091 198 151667 271 151668 "
                             "271\n");
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --chat '[{\"role\": \"system\", "
                         "\"content\": \"s\"}, {\"role\": \"user\", \"content\": \"hi\"}]'",
                         out, sizeof out),
                     0);
    assert_string_equal(out, "151644 8948 198 82 151645 198 151644 872 198 6023 151645 198 "
                             "151644 77091 198\n");
    assert_int_equal(
        run("tokenize --tokenizer " QWEN3 " --chat '[{\"role\": 1}]'", out, sizeof out), 1);
}

static void test_detokenize(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(
        run("detokenize --tokenizer " QWEN3 " '151644, 872, 198, 6023'", out, sizeof out), 0);
    assert_string_equal(out, "<|im_start|>user\nhi\n");
    assert_int_equal(
        run("detokenize --tokenizer " QWEN3 " --skip-special '[151644, 6023]'", out, sizeof out),
        0);
    assert_string_equal(out, "hi\n");
    assert_int_equal(
        run("detokenize --tokenizer " QWEN3 " --stream '9707 11 61804 233'", out, sizeof out), 0);
    assert_string_equal(out, "\"Hello\"\n\",\"\n\" \"\n\"👋\"\n\"\"\n");
}

static void test_bench_and_errors(void **state)
{
    (void)state;
    char out[4096];
    char path[] = "/tmp/rig_cli_bench_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *docs = "{\"text\": \"Hello world\"}\n{\"text\": \"你好\"}\n";
    assert_int_equal(write(fd, docs, strlen(docs)), (ssize_t)strlen(docs));
    close(fd);
    char args[512];
    snprintf(args, sizeof args, "tokenize --tokenizer %s --bench %s --seconds 0.05", QWEN3, path);
    assert_int_equal(run(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"tokens\": 3,"));
    assert_non_null(strstr(out, "\"load_ms\""));
    remove(path);
    assert_int_equal(run("tokenize", out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer " QWEN3, out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --bogus x", out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer /nonexistent x", out, sizeof out), 1);
    assert_int_equal(run("detokenize --tokenizer " QWEN3 " '1 two'", out, sizeof out), 2);
    assert_int_equal(run("tokenize --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: rig tokenize"));
}

static void test_invalid_utf8_input(void **state)
{
    (void)state;
    char out[256], command[8192];
    snprintf(command, sizeof command,
             "printf 'ok \\377' | '%s' tokenize --tokenizer %s - "
             "2>/dev/null",
             rig_path, QWEN3);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    size_t len = fread(out, 1, sizeof out - 1, pipe);
    out[len] = '\0';
    int status = pclose(pipe);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_string_equal(out, "");
}

int main(void)
{
    char self[PATH_MAX - 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 77;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) return 77;
    *slash = '\0';
    snprintf(rig_path, sizeof rig_path, "%s/../rig", self);
    if (access(rig_path, X_OK) != 0) {
        fprintf(stderr, "skipped: %s not built\n", rig_path);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenize),           cmocka_unit_test(test_chat),
        cmocka_unit_test(test_detokenize),         cmocka_unit_test(test_bench_and_errors),
        cmocka_unit_test(test_invalid_utf8_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
