/* Runs the kernels of a vdla shared object (what an artifact links for a board) for a test on
 * another machine: built for the board's triple with zig cc and run under qemu-user, it takes
 * requests on stdin and answers on stdout (all integers little endian, as on every target).
 *
 *   usage: qemu_kernel_host LIBRARY.so THREADS
 *   call:   u32 name length (1..255), name, u32 buffer count (<= 64), per buffer u64 size and
 *           its bytes  ->  i32 kernel return code, then every buffer's bytes after the call
 *   string: u32 name length, '?' + symbol name  ->  u32 length, the NUL-terminated string at
 *           the symbol (length 0 when there is none): the kernels' NAME__argspec records
 *   end:    u32 0 (or end of input)
 *
 * THREADS goes into each kernel's NAME__num_threads before its first call, so parallel loops
 * run on the library's own thread pool, as on the board. Any other failure exits non-zero
 * with a message on stderr; the test driver reports it with the request it was serving.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUFFERS 64
#define MAX_NAME 255

static int read_exact(void *dst, size_t n) { return fread(dst, 1, n, stdin) == n; }
static int write_exact(const void *src, size_t n) { return fwrite(src, 1, n, stdout) == n; }

static int fail(const char *what, const char *name) {
    fprintf(stderr, "qemu_kernel_host: %s %s\n", what, name);
    return 3;
}

static int answer_string(void *lib, const char *symbol) {
    const char *text = dlsym(lib, symbol);
    uint32_t len = text ? (uint32_t)strlen(text) : 0;
    if (!write_exact(&len, 4) || !write_exact(text ? text : "", len)) return fail("cannot answer for", symbol);
    fflush(stdout);
    return 0;
}

static int call_kernel(void *lib, const char *name, int threads) {
    int32_t (*kernel)(void **) = (int32_t (*)(void **))dlsym(lib, name);
    if (!kernel) return fail("the library exports no kernel", name);
    char threads_symbol[MAX_NAME + 16];
    snprintf(threads_symbol, sizeof threads_symbol, "%s__num_threads", name);
    int32_t *num_threads = dlsym(lib, threads_symbol);
    if (num_threads) *num_threads = threads;

    uint32_t count;
    if (!read_exact(&count, 4) || count > MAX_BUFFERS) return fail("bad buffer count for", name);
    void *buffers[MAX_BUFFERS];
    uint64_t sizes[MAX_BUFFERS];
    for (uint32_t k = 0; k < count; k++) {
        if (!read_exact(&sizes[k], 8) || sizes[k] > SIZE_MAX / 2) return fail("bad buffer size for", name);
        if (posix_memalign(&buffers[k], 64, sizes[k] ? (size_t)sizes[k] : 1)) return fail("out of memory for", name);
        if (!read_exact(buffers[k], (size_t)sizes[k])) return fail("short buffer for", name);
    }
    int32_t rc = kernel(buffers);
    if (!write_exact(&rc, 4)) return fail("cannot answer for", name);
    for (uint32_t k = 0; k < count; k++) {
        if (!write_exact(buffers[k], (size_t)sizes[k])) return fail("cannot answer for", name);
        free(buffers[k]);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBRARY.so THREADS\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "qemu_kernel_host: cannot load %s: %s\n", argv[1], dlerror());
        return 2;
    }
    int threads = atoi(argv[2]);
    for (;;) {
        uint32_t len;
        char name[MAX_NAME + 1];
        if (!read_exact(&len, 4) || len == 0) return 0;
        if (len > MAX_NAME || !read_exact(name, len)) return fail("bad request", "");
        name[len] = 0;
        int rc = name[0] == '?' ? answer_string(lib, name + 1) : call_kernel(lib, name, threads);
        if (rc) return rc;
    }
}
