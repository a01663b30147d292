//! NFS file handles: a kernel file handle bound to an export and sealed with a keyed MAC.
//!
//! Layout (at most 64 bytes, the NFSv3 limit):
//! `version:u8 | khandle_len:u8 | export_id:u32be | handle_type:i32be | khandle | mac:[u8;16]`.
//! The kernel handle (name_to_handle_at) survives restarts; the MAC (SipHash-2-4-128 under a key
//! kept in the state directory) makes a forged or bit-flipped handle fail before any system call.

use std::hash::Hasher;
use std::io::{self, Read, Write};
use std::path::Path;

use siphasher::sip128::{Hasher128, SipHasher24};

use crate::error::{VfsError, VfsResult};
use crate::sys::{KernelHandle, MAX_KERNEL_HANDLE};

const VERSION: u8 = 1;
const MAC_LEN: usize = 16;
const HEADER: usize = 10;
/// Largest handle we produce.
pub const MAX_FH: usize = HEADER + MAX_KERNEL_HANDLE + MAC_LEN;

/// The secret that seals handles; must persist for handles to survive a restart.
#[derive(Clone)]
pub struct HandleKey([u8; 16]);

impl std::fmt::Debug for HandleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandleKey(..)")
    }
}

impl HandleKey {
    /// A key from raw bytes (tests).
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Self(b)
    }

    /// Loads the key from `path`, creating it with random bytes (mode 0600) when absent.
    pub fn load_or_create(path: &Path) -> io::Result<Self> {
        match std::fs::File::open(path) {
            Ok(mut f) => {
                let mut b = [0u8; 16];
                f.read_exact(&mut b).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("{}: handle key unreadable: {e}", path.display()),
                    )
                })?;
                Ok(Self(b))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut b = [0u8; 16];
                std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                use std::os::unix::fs::OpenOptionsExt;
                let tmp = path.with_extension("tmp");
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&tmp)?;
                f.write_all(&b)?;
                f.sync_all()?;
                std::fs::rename(&tmp, path)?;
                Ok(Self(b))
            }
            Err(e) => Err(e),
        }
    }

    fn mac(&self, body: &[u8]) -> [u8; MAC_LEN] {
        let mut h = SipHasher24::new_with_key(&self.0);
        h.write(body);
        h.finish128().as_bytes()
    }

    /// Builds the wire handle for `kh` in export `export_id`.
    pub fn seal(&self, export_id: u32, kh: &KernelHandle) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER + kh.bytes.len() + MAC_LEN);
        v.push(VERSION);
        v.push(kh.bytes.len() as u8);
        v.extend_from_slice(&export_id.to_be_bytes());
        v.extend_from_slice(&kh.handle_type.to_be_bytes());
        v.extend_from_slice(&kh.bytes);
        let mac = self.mac(&v);
        v.extend_from_slice(&mac);
        v
    }

    /// Checks a wire handle and returns its export id and kernel handle.
    pub fn open(&self, fh: &[u8]) -> VfsResult<(u32, KernelHandle)> {
        let export_id = self.verify(fh)?;
        let klen = fh[1] as usize;
        let handle_type = i32::from_be_bytes([fh[6], fh[7], fh[8], fh[9]]);
        Ok((
            export_id,
            KernelHandle {
                handle_type,
                bytes: fh[HEADER..HEADER + klen].to_vec(),
            },
        ))
    }

    /// Checks a wire handle and returns its export id.
    pub fn verify(&self, fh: &[u8]) -> VfsResult<u32> {
        let klen = well_formed(fh)?;
        let (body, mac) = fh.split_at(HEADER + klen);
        if !constant_time_eq(&self.mac(body), mac) {
            return Err(VfsError::BadHandle);
        }
        Ok(export_of(fh))
    }
}

/// The kernel handle's length, when `fh` has the layout of a handle (MAC unchecked).
fn well_formed(fh: &[u8]) -> VfsResult<usize> {
    if fh.len() < HEADER + MAC_LEN || fh[0] != VERSION {
        return Err(VfsError::BadHandle);
    }
    let klen = fh[1] as usize;
    if klen > MAX_KERNEL_HANDLE || fh.len() != HEADER + klen + MAC_LEN {
        return Err(VfsError::BadHandle);
    }
    Ok(klen)
}

/// The export id of a well-formed handle: one that passed [`HandleKey::verify`], or is byte
/// for byte one that did (a cache holds it), which needs no MAC computed again.
pub(crate) fn export_of(fh: &[u8]) -> u32 {
    u32::from_be_bytes([fh[2], fh[3], fh[4], fh[5]])
}

/// A digest of the kernel handle inside a well-formed wire handle (its type and bytes, not the
/// export): stable across restarts, and different for an inode number reused by a new file
/// wherever the file system's handles carry a generation (ext4, xfs, btrfs, tmpfs).
pub(crate) fn kernel_digest(fh: &[u8]) -> u64 {
    let klen = (fh.get(1).copied().unwrap_or(0) as usize).min(fh.len().saturating_sub(HEADER));
    let body = fh.get(6..HEADER + klen).unwrap_or(&[]);
    // FNV-1a: the digest only has to tell handles of one inode number apart, not resist
    // clients (handles are sealed by a MAC before they reach here).
    body.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A hash of a handle for the caches keyed by handle: its MAC, folded. The MAC is a keyed
/// pseudo-random function of the rest, so clients cannot aim handles at one bucket, and any
/// change of a MAC byte moves a guessed handle to another bucket (no timing to learn a MAC from
/// comparisons); SipHash over the whole handle again per lookup would cost more than the MAC.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Bytes hashes as its length (usize), then its bytes in one write.
        let tail = &bytes[bytes.len().saturating_sub(MAC_LEN)..];
        let mut x = self.0.rotate_left(29) ^ bytes.len() as u64;
        for chunk in tail.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            x = (x ^ u64::from_le_bytes(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        self.0 = x;
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = self.0.rotate_left(29) ^ n as u64;
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> HandleKey {
        HandleKey::from_bytes([7; 16])
    }

    #[test]
    fn seal_open_roundtrip() {
        let kh = KernelHandle {
            handle_type: 1,
            bytes: vec![1, 2, 3, 4, 5, 6, 7, 8],
        };
        let fh = key().seal(42, &kh);
        assert!(fh.len() <= 64);
        assert_eq!(key().open(&fh).unwrap(), (42, kh));
    }

    #[test]
    fn other_key_rejects() {
        let kh = KernelHandle {
            handle_type: 1,
            bytes: vec![9; 8],
        };
        let fh = key().seal(1, &kh);
        assert_eq!(
            HandleKey::from_bytes([8; 16]).open(&fh),
            Err(VfsError::BadHandle)
        );
    }

    #[test]
    fn key_persists() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/fh.key");
        let a = HandleKey::load_or_create(&p).unwrap();
        let b = HandleKey::load_or_create(&p).unwrap();
        assert_eq!(a.0, b.0);
    }

    proptest! {
        #[test]
        fn any_bit_flip_is_detected(bit in 0usize..(34 * 8)) {
            let kh = KernelHandle { handle_type: 1, bytes: vec![0xab; 8] };
            let mut fh = key().seal(3, &kh);
            fh[bit / 8] ^= 1 << (bit % 8);
            prop_assert_eq!(key().open(&fh), Err(VfsError::BadHandle));
        }

        #[test]
        fn garbage_is_rejected(v in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert!(key().open(&v).is_err());
        }
    }
}
