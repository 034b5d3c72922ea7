/* test_tokenizer_cli.c — `rig tokenize` and `rig detokenize` as a user runs them.
 *
 * Runs the built `rig` binary (next to this test's directory: build/rig) through popen and
 * checks its standard output and exit status (HF's ids, for Qwen3 and the small Llama-3-style
 * variant): ids of a text and of standard input, --no-special, --tokens,
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
#define LLAMA RIG_TEST_DATA_DIR "/tokenizer/variants/llama3"

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

/* Most runs use the small Llama-3-style variant (fast to load under sanitizers); the Qwen3
 * runs check the real model's chat prompt and streaming. Expected ids are HF's. */
static void test_tokenize(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(run("tokenize --tokenizer " LLAMA " 'Hello, world! 你好'", out, sizeof out),
                     0);
    assert_string_equal(out, "2256 39 301 385 11 1879 0 220 160 121 254 161 98 121\n");
    assert_int_equal(
        run("tokenize --tokenizer " LLAMA " --no-special 'Hello world'", out, sizeof out), 0);
    assert_string_equal(out, "39 301 385 1879\n");
    assert_int_equal(run("tokenize --tokenizer " LLAMA " - < /dev/null", out, sizeof out), 0);
    assert_string_equal(out, "2256\n");
    assert_int_equal(run("tokenize --tokenizer " LLAMA " --tokens 'it'\"'\"'s'", out, sizeof out),
                     0);
    assert_string_equal(out, "2256\t<|begin_of_text|>\n275\tit\n594\t's\n");
}

static void test_chat(void **state)
{
    (void)state;
    char out[4096];
    /* Qwen3: <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n */
    assert_int_equal(run("tokenize --tokenizer " QWEN3 " --chat hi", out, sizeof out), 0);
    assert_string_equal(out, "151644 872 198 6023 151645 198 151644 77091 198\n");
    /* Llama-3: BOS, system and user turns, the assistant header. */
    assert_int_equal(run("tokenize --tokenizer " LLAMA " --chat '[{\"role\": \"system\", "
                         "\"content\": \"s\"}, {\"role\": \"user\", \"content\": \"hi\"}]'",
                         out, sizeof out),
                     0);
    assert_string_equal(out, "2256 2258 82 612 2259 271 82 2260 2258 872 2259 271 71 72 2260 "
                             "2258 395 380 517 2259 271\n");
    assert_int_equal(
        run("tokenize --tokenizer " LLAMA " --chat '[{\"role\": 1}]'", out, sizeof out), 1);
    assert_int_equal(run("tokenize --tokenizer " LLAMA " --chat '[{\"role\": '", out, sizeof out),
                     2);
}

static void test_detokenize(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(
        run("detokenize --tokenizer " LLAMA " '2256, 39, 301, 385, 1879'", out, sizeof out), 0);
    assert_string_equal(out, "<|begin_of_text|>Hello world\n");
    assert_int_equal(
        run("detokenize --tokenizer " LLAMA " --skip-special '[2256, 39, 301]'", out, sizeof out),
        0);
    assert_string_equal(out, "Hel\n");
    /* Qwen3's id 61804 is a space and the first byte of 👋: the emoji waits for the next id. */
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
    snprintf(args, sizeof args, "tokenize --tokenizer %s --bench %s --seconds 0.05", LLAMA, path);
    assert_int_equal(run(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"tokens\": 12,"));
    assert_non_null(strstr(out, "\"load_ms\""));
    remove(path);
    assert_int_equal(run("tokenize", out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer " LLAMA, out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer " LLAMA " --bogus x", out, sizeof out), 2);
    assert_int_equal(run("tokenize --tokenizer /nonexistent x", out, sizeof out), 1);
    assert_int_equal(run("detokenize --tokenizer " LLAMA " '1 two'", out, sizeof out), 2);
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
             rig_path, LLAMA);
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
