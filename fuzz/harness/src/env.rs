//! The scratch server environment of a fuzzing process, created once (`OnceLock`).
//!
//! Layout under the base directory (a private tmpfs at `/tmp/rnfs-fuzz` when the process can
//! make one, else `$TMPDIR/rnfs-fuzz-<pid>`):
//!
//! ```text
//! state/            handle key (not exported)
//! export/  1777     exported rw, root_squash, sec=sys:none, fsid=1
//!   file   0666     69632 bytes: data, a hole, data; xattr user.fuzz
//!   dir/   1777     a, b (files), sub/ (directory)
//!   link            symbolic link to "file"
//!   fifo   0666     named pipe
//! ro/      0755     exported ro, all_squash, fsid=2
//!   file   0644
//! ```
//!
//! The fixtures are owned by root in sticky directories and the export squashes root, so fuzzed
//! calls can write into `file` and create entries beside the fixtures but cannot remove or
//! rename them: their handles stay valid for the whole process. Every [`RESET_EVERY`] inputs the
//! entries created by fuzzed calls are removed and `file` is rewritten.
//!
//! Isolation: on the private tmpfs (mounted `nodev,nosuid`, 128 MiB, 16384 inodes, in a mount
//! namespace of the fuzzing thread only) nothing a fuzzed call does can touch the host's file
//! systems or fill its disk. Files are also capped at 64 MiB with RLIMIT_FSIZE (SIGXFSZ ignored).

use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use vfs::{Client, Creds, Vfs, VfsConfig};

/// Inputs between two resets of the export's contents.
pub const RESET_EVERY: u64 = 1000;

/// Size of the fixture `file`.
pub const FILE_LEN: u64 = 69632;

/// Marker names and what they stand for. In a fuzz input, the XDR opaque `00000008` + name is
/// replaced by the XDR opaque of the value.
pub const MARKERS: &[(&[u8; 8], &str)] = &[
    (b"@FH@ROOT", "handle of the rw export's root"),
    (b"@FH@FILE", "handle of export/file"),
    (b"@FH@DIR_", "handle of export/dir"),
    (b"@FH@DIRA", "handle of export/dir/a"),
    (b"@FH@LINK", "handle of export/link"),
    (b"@FH@FIFO", "handle of export/fifo"),
    (b"@FH@RORT", "handle of the ro export's root"),
    (b"@FH@ROFL", "handle of ro/file"),
    (b"@EXPORT@", "path of the rw export"),
    (b"@ROEXPT@", "path of the ro export"),
];

/// The environment of this process.
pub struct Env {
    /// The backend shared by every per-input server.
    pub vfs: Arc<Vfs>,
    /// Base directory.
    pub base: PathBuf,
    /// The rw export.
    pub rw: PathBuf,
    /// The ro export.
    pub ro: PathBuf,
    /// Whether the base is a private tmpfs.
    pub isolated: bool,
    /// One metrics registry for every per-input server: counters are no protocol state, and
    /// creating every procedure's histograms anew took a third of each input's time.
    pub metrics: Arc<sunrpc::metrics::RpcMetrics>,
    values: Vec<([u8; 8], Vec<u8>)>,
    inputs: AtomicU64,
}

static ENV: OnceLock<Env> = OnceLock::new();
static FALLBACK_DIR: OnceLock<PathBuf> = OnceLock::new();

/// The environment, created on first use.
pub fn env() -> &'static Env {
    ENV.get_or_init(setup)
}

impl Env {
    /// The value of a marker name, if it is one and its value is known.
    pub fn marker_value(&self, name: &[u8]) -> Option<&[u8]> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Called before each input: resets the export every [`RESET_EVERY`] inputs.
    pub fn before_input(&self) {
        let n = self.inputs.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(RESET_EVERY) {
            self.reset();
        }
    }

    /// Called after each input: the backend leaves the thread's fsuid at the last caller's;
    /// libFuzzer writes corpus files and artifacts from this thread, so make it root again.
    pub fn after_input(&self) {
        vfs::cred::as_root(|| ());
    }

    /// Removes what fuzzed calls created in the export and rewrites `file`.
    pub fn reset(&self) {
        vfs::cred::as_root(|| {
            clear_except(&self.rw, &["file", "dir", "link", "fifo"]);
            clear_except(&self.rw.join("dir"), &["a", "b", "sub"]);
            clear_except(&self.rw.join("dir/sub"), &[]);
            write_file_fixture(&self.rw.join("file"));
        });
    }
}

fn clear_except(dir: &Path, keep: &[&str]) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        if keep.iter().any(|k| name.as_bytes() == k.as_bytes()) {
            continue;
        }
        let p = e.path();
        // symlink_metadata: never follow a link the fuzzer made.
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => drop(std::fs::remove_dir_all(&p)),
            Ok(_) => drop(std::fs::remove_file(&p)),
            Err(_) => {}
        }
    }
}

fn write_file_fixture(p: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    // Truncated in place: the inode, and so the handle, stays the same.
    let Ok(mut f) = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(p)
    else {
        return;
    };
    let block: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    let _ = f.write_all(&block);
    let _ = f.seek(SeekFrom::Start(FILE_LEN - 4096));
    let _ = f.write_all(&block);
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

/// A private tmpfs at /tmp/rnfs-fuzz in a new mount namespace of this thread, if allowed.
fn private_tmpfs() -> Option<PathBuf> {
    if std::env::var_os("RNFS_FUZZ_NO_TMPFS").is_some() {
        return None;
    }
    let mnt = PathBuf::from("/tmp/rnfs-fuzz");
    // SAFETY: plain system calls with valid NUL-terminated arguments.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return None;
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return None;
        }
        std::fs::create_dir_all(&mnt).ok()?;
        let opts = c"size=128m,nr_inodes=16384,mode=0755";
        if libc::mount(
            c"rnfs-fuzz".as_ptr(),
            cstr(&mnt).as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NODEV | libc::MS_NOSUID,
            opts.as_ptr().cast(),
        ) != 0
        {
            return None;
        }
    }
    Some(mnt)
}

extern "C" fn remove_fallback_dir() {
    if let Some(d) = FALLBACK_DIR.get() {
        // SAFETY: per-thread fsuid/fsgid changes.
        unsafe {
            libc::setfsuid(0);
            libc::setfsgid(0);
        }
        let _ = std::fs::remove_dir_all(d);
    }
}

fn setup() -> Env {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!(
            "rnfs-fuzz: not running as root: handles cannot be opened (open_by_handle_at needs \
             CAP_DAC_READ_SEARCH), so most calls end in STALE; run the fuzzer as root"
        );
    }
    let (base, isolated) = match private_tmpfs() {
        Some(b) => (b, true),
        None => {
            let d = std::env::temp_dir().join(format!("rnfs-fuzz-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).expect("create the fuzzing directory");
            let _ = FALLBACK_DIR.set(d.clone());
            // SAFETY: registers a plain extern "C" function.
            unsafe { libc::atexit(remove_fallback_dir) };
            eprintln!(
                "rnfs-fuzz: no private tmpfs (needs root and mount namespaces); exporting {} on \
                 the host file system instead",
                d.display()
            );
            (d, false)
        }
    };
    // SAFETY: plain system calls.
    unsafe {
        let lim = libc::rlimit {
            rlim_cur: 64 << 20,
            rlim_max: libc::RLIM_INFINITY,
        };
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_FSIZE, &mut old) == 0 {
            let lim = libc::rlimit {
                rlim_cur: lim.rlim_cur.min(old.rlim_max),
                rlim_max: old.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
        }
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }

    let state = base.join("state");
    let rw = base.join("export");
    let ro = base.join("ro");
    let mkdir = |p: &Path, mode: u32| {
        std::fs::create_dir_all(p).expect("create fixture directory");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    mkdir(&state, 0o700);
    mkdir(&rw, 0o1777);
    mkdir(&ro, 0o755);
    mkdir(&rw.join("dir"), 0o1777);
    mkdir(&rw.join("dir/sub"), 0o755);
    let file = rw.join("file");
    write_file_fixture(&file);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    // SAFETY: valid NUL-terminated strings and buffer.
    unsafe {
        libc::setxattr(
            cstr(&file).as_ptr(),
            c"user.fuzz".as_ptr(),
            b"value".as_ptr().cast(),
            5,
            0,
        );
        libc::mkfifo(cstr(&rw.join("fifo")).as_ptr(), 0o666);
        libc::chmod(cstr(&rw.join("fifo")).as_ptr(), 0o666);
    }
    for (n, body) in [("a", &b"hello\n"[..]), ("b", &b""[..])] {
        std::fs::write(rw.join("dir").join(n), body).expect("fixture");
    }
    let _ = std::os::unix::fs::symlink("file", rw.join("link"));
    std::fs::write(ro.join("file"), b"read-only\n").expect("fixture");

    let q = |p: &Path| format!("\"{}\"", p.display());
    let text = format!(
        "{} *(rw,insecure,root_squash,sec=sys:none,fsid=1)\n{} *(ro,insecure,all_squash,fsid=2)\n",
        q(&rw),
        q(&ro)
    );
    let exports = vfs::exports::parse_exports(&text, "fuzz-exports").expect("fuzz exports parse");
    let vfs = Arc::new(
        Vfs::new(VfsConfig {
            exports,
            state_dir: state,
            fd_cache: 256,
        })
        .expect("start the backend"),
    );

    let client = Client {
        addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
        privileged: true,
        ident: Some(Creds::root()),
        flavor: vfs::exports::SecFlavor::Sys,
    };
    let mut values: Vec<([u8; 8], Vec<u8>)> = vec![
        (*b"@EXPORT@", rw.as_os_str().as_bytes().to_vec()),
        (*b"@ROEXPT@", ro.as_os_str().as_bytes().to_vec()),
    ];
    let mut add = |name: &[u8; 8], fh: Option<Bytes>| match fh {
        Some(fh) => values.push((*name, fh.to_vec())),
        None => eprintln!(
            "rnfs-fuzz: no handle for marker {}",
            String::from_utf8_lossy(name)
        ),
    };
    let lookup = |dir: &Bytes, name: &[u8]| -> Option<Bytes> {
        let (caller, node) = vfs.authorize(dir, &client).ok()?;
        vfs.lookup(&caller, &node, name).ok().map(|n| n.fh)
    };
    let root_fh = vfs
        .mount(rw.as_os_str().as_bytes(), &client)
        .ok()
        .map(|(fh, _)| fh);
    let ro_fh = vfs
        .mount(ro.as_os_str().as_bytes(), &client)
        .ok()
        .map(|(fh, _)| fh);
    let dir_fh = root_fh.as_ref().and_then(|r| lookup(r, b"dir"));
    add(b"@FH@ROOT", root_fh.clone());
    add(
        b"@FH@FILE",
        root_fh.as_ref().and_then(|r| lookup(r, b"file")),
    );
    add(b"@FH@DIR_", dir_fh.clone());
    add(b"@FH@DIRA", dir_fh.as_ref().and_then(|d| lookup(d, b"a")));
    add(
        b"@FH@LINK",
        root_fh.as_ref().and_then(|r| lookup(r, b"link")),
    );
    add(
        b"@FH@FIFO",
        root_fh.as_ref().and_then(|r| lookup(r, b"fifo")),
    );
    add(b"@FH@RORT", ro_fh.clone());
    add(b"@FH@ROFL", ro_fh.as_ref().and_then(|r| lookup(r, b"file")));
    vfs::cred::as_root(|| ());

    // A panic inside a call leaves the thread with the caller's fsuid; libFuzzer then writes the
    // crash artifact from this thread, so become root again first.
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // SAFETY: per-thread fsuid/fsgid changes.
        unsafe {
            libc::setfsuid(0);
            libc::setfsgid(0);
        }
        prev(info)
    }));

    Env {
        vfs,
        base,
        rw,
        ro,
        isolated,
        metrics: Arc::default(),
        values,
        inputs: AtomicU64::new(0),
    }
}
