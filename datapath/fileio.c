/* datapath/fileio.c — atomic whole-file writes and whole-file reads with
 * O_DIRECT when alignment allows, falling back to buffered I/O where the
 * file system refuses O_DIRECT (tmpfs answers EINVAL). */
#include "datapath/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datapath/layout.h"

#ifdef KVSIM_TEST_FAULTS
static dp_fault armed_fault;
void dp_fault_arm(dp_fault f) { armed_fault = f; }
static dp_fault take_fault(void)
{
    dp_fault f = armed_fault;
    armed_fault = DP_FAULT_NONE;
    return f;
}
#else
enum { DP_FAULT_NONE, DP_FAULT_CRASH_BEFORE_RENAME, DP_FAULT_CRASH_MID_WRITE, DP_FAULT_TORN_RENAME };
static int take_fault(void) { return DP_FAULT_NONE; }
#endif

static bool aligned(const void *buf, size_t n) { return (uintptr_t)buf % DP_ALIGN == 0 && n % DP_ALIGN == 0; }

/* open(2), with O_DIRECT first when wanted; *direct says which one worked. */
static int open_maybe_direct(const char *path, int flags, bool want_direct, bool *direct)
{
    *direct = false;
    if (want_direct) {
        int fd = open(path, flags | O_DIRECT, 0644);
        if (fd >= 0 || errno != EINVAL) {
            *direct = fd >= 0;
            return fd;
        }
    }
    return open(path, flags, 0644);
}

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, buf, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        buf += k;
        n -= (size_t)k;
    }
    return 0;
}

int dp_mkdirs(const char *dir, sim_err *err)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return sim_errf(err, "%s: path too long", dir);
    for (char *p = buf + 1;; p++) {
        bool end = *p == 0;
        if (*p != '/' && !end) continue;
        *p = 0;
        if (mkdir(buf, 0755) && errno != EEXIST)
            return sim_errf(err, "cannot create directory %s: %s", buf, strerror(errno));
        if (end) return 0;
        *p = '/';
    }
}

bool dp_file_is_temp(const char *name) { return strstr(name, ".tmp.") != NULL; }

int dp_file_write_atomic(const char *path, const void *buf, size_t n, bool *direct, sim_err *err)
{
    static unsigned counter;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d.%u", path, (int)getpid(), counter++) >= (int)sizeof tmp) {
        sim_errf(err, "%s: path too long", path);
        return DP_EIO;
    }
    int fault = take_fault();
    int fd = open_maybe_direct(tmp, O_WRONLY | O_CREAT | O_EXCL, aligned(buf, n), direct);
    if (fd < 0) {
        sim_errf(err, "%s: cannot create: %s", tmp, strerror(errno));
        return DP_EIO;
    }
    size_t len = fault == DP_FAULT_CRASH_MID_WRITE || fault == DP_FAULT_TORN_RENAME ? n / 2 / DP_ALIGN * DP_ALIGN : n;
    int e = write_all(fd, buf, len) ? errno : 0;
    if (close(fd) && !e) e = errno;
    if (e) {
        unlink(tmp);
        sim_errf(err, "%s: write failed: %s", tmp, strerror(e));
        return DP_EIO;
    }
    if (fault == DP_FAULT_CRASH_BEFORE_RENAME || fault == DP_FAULT_CRASH_MID_WRITE) {
        sim_errf(err, "%s: injected crash before rename (temporary left behind)", tmp);
        return DP_EIO;
    }
    if (rename(tmp, path)) {
        e = errno;
        unlink(tmp);
        sim_errf(err, "%s: rename to %s failed: %s", tmp, path, strerror(e));
        return DP_EIO;
    }
    return DP_OK;
}

int dp_file_read(const char *path, void *buf, size_t cap, size_t *got, bool *direct, sim_err *err)
{
    *got = 0;
    int fd = open_maybe_direct(path, O_RDONLY, aligned(buf, cap), direct);
    if (fd < 0) {
        sim_errf(err, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? DP_MISS : DP_EIO;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        sim_errf(err, "%s: stat failed: %s", path, strerror(e));
        return DP_EIO;
    }
    size_t size = (size_t)st.st_size;
    if (size > cap) {
        close(fd);
        sim_errf(err, "%s: %zu bytes, more than the %zu expected", path, size, cap);
        return DP_CORRUPT;
    }
    /* O_DIRECT reads whole aligned blocks; the last one may end past EOF. */
    size_t want = *direct ? (size_t)dp_align_up((int64_t)size) : size;
    size_t total = 0;
    while (total < size) {
        ssize_t k = read(fd, (char *)buf + total, want - total);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            sim_errf(err, "%s: read failed: %s", path, strerror(e));
            return DP_EIO;
        }
        if (k == 0) break;
        total += (size_t)k;
    }
    close(fd);
    *got = total < size ? total : size;
    return DP_OK;
}
