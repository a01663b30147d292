//! A fault layer under rnfsd: an LD_PRELOAD library, built by the test with the system's C
//! compiler, whose `pwritev2` (rnfsd's writes), `fdatasync`, `fsync`, `truncate64` and
//! `ftruncate64` (size changes, as "ftruncate"), `fallocate64` (ALLOCATE) and
//! `copy_file_range` (COPY, by its destination) fail with an errno the test chooses, for files
//! whose path contains a text it chooses, or stall for a time it chooses before they go on,
//! while its control file says so. Storage faults are
//! otherwise out of reach on loopback (no device-mapper in a container); the calls are the
//! ones rnfsd makes through the C library.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The errno the control file ("OP ERRNO PATH-PART") asks for op on path, or 0. */
static int fault_path(const char *op, const char *path) {
    const char *ctl = getenv("RNFS_FAULT_CONTROL");
    if (!ctl) return 0;
    int c = open(ctl, O_RDONLY | O_CLOEXEC);
    if (c < 0) return 0;
    char buf[512];
    ssize_t n = read(c, buf, sizeof buf - 1);
    close(c);
    if (n <= 0) return 0;
    buf[n] = 0;
    char want[64], part[400];
    int err;
    if (sscanf(buf, "%63s %d %399s", want, &err, part) != 3 || strcmp(want, op) != 0) return 0;
    /* rnfsd names files through /proc/self/fd: the real path is what the test chose by */
    char real[4096];
    if (!realpath(path, real)) return 0;
    if (!strstr(real, part)) return 0;
    /* a negative errno: the device stalls that many milliseconds, then the call goes on */
    if (err < 0) { usleep((useconds_t)(-err) * 1000); return 0; }
    return err;
}

static int fault(const char *op, int fd) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    return fault_path(op, link);
}

int truncate64(const char *path, off64_t len) {
    static int (*real)(const char *, off64_t);
    if (!real) real = dlsym(RTLD_NEXT, "truncate64");
    int e = fault_path("ftruncate", path);
    if (e) { errno = e; return -1; }
    return real(path, len);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t, int);
    if (!real) real = dlsym(RTLD_NEXT, "pwritev2");
    int e = fault("pwrite", fd);
    if (e) { errno = e; return -1; }
    return real(fd, iov, cnt, off, flags);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    int e = fault("fdatasync", fd);
    if (e) { errno = e; return -1; }
    return real(fd);
}

int ftruncate64(int fd, off64_t len) {
    static int (*real)(int, off64_t);
    if (!real) real = dlsym(RTLD_NEXT, "ftruncate64");
    int e = fault("ftruncate", fd);
    if (e) { errno = e; return -1; }
    return real(fd, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
    static int (*real)(int, int, off64_t, off64_t);
    if (!real) real = dlsym(RTLD_NEXT, "fallocate64");
    int e = fault("fallocate", fd);
    if (e) { errno = e; return -1; }
    return real(fd, mode, off, len);
}

/* the destination names the file */
ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t len,
                        unsigned int flags) {
    static ssize_t (*real)(int, off64_t *, int, off64_t *, size_t, unsigned int);
    if (!real) real = dlsym(RTLD_NEXT, "copy_file_range");
    int e = fault("copy", out);
    if (e) { errno = e; return -1; }
    return real(in, in_off, out, out_off, len, flags);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    int e = fault("fsync", fd);
    if (e) { errno = e; return -1; }
    return real(fd);
}
"#;

/// The built library and its control file.
pub struct FaultLayer {
    _dir: tempfile::TempDir,
    so: PathBuf,
    control: PathBuf,
}

impl FaultLayer {
    /// Builds the library (`cc`, which the Rust toolchain needs as its linker anyway).
    pub fn build() -> FaultLayer {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("fault.c");
        std::fs::write(&src, SOURCE).unwrap();
        let so = dir.path().join("libfault.so");
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&so)
            .arg(&src)
            .arg("-ldl")
            .output()
            .expect("cc");
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let control = dir.path().join("control");
        FaultLayer {
            _dir: dir,
            so,
            control,
        }
    }

    /// The environment that puts it under a process.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.so.display().to_string()),
            (
                "RNFS_FAULT_CONTROL".into(),
                self.control.display().to_string(),
            ),
        ]
    }

    /// From now on `op` waits `ms` milliseconds (a device that stalls) before it goes on, on
    /// files whose path contains `part`.
    pub fn stall(&self, op: &str, ms: u32, part: &str) {
        self.set(op, -(ms as i32), part);
    }

    /// From now on `op` ("pwrite", "fdatasync", "fsync", "ftruncate", "fallocate", "copy")
    /// fails with `errno` on files whose path contains `part` (no spaces).
    pub fn set(&self, op: &str, errno: i32, part: &str) {
        let tmp = self.control.with_extension("new");
        std::fs::write(&tmp, format!("{op} {errno} {part}\n")).unwrap();
        std::fs::rename(&tmp, &self.control).unwrap();
    }

    /// No more faults.
    pub fn clear(&self) {
        let _ = std::fs::remove_file(&self.control);
    }
}
