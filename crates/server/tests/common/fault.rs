//! A fault layer under rnfsd: an LD_PRELOAD library, built by the test with the system's C
//! compiler, whose `pwritev2` (rnfsd's writes), `fdatasync` and `fsync` fail with an errno the
//! test chooses, for files whose path contains a text it chooses, while its control file says
//! so. Storage faults are otherwise out of reach on loopback (no device-mapper in a
//! container); the calls are the ones rnfsd makes through the C library.

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

/* The errno the control file ("OP ERRNO PATH-PART") asks for op on fd, or 0. */
static int fault(const char *op, int fd) {
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
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t m = readlink(link, path, sizeof path - 1);
    if (m <= 0) return 0;
    path[m] = 0;
    return strstr(path, part) ? err : 0;
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

    /// From now on `op` ("pwrite", "fdatasync", "fsync") fails with `errno` on files whose
    /// path contains `part` (no spaces).
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
