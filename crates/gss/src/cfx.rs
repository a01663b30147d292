//! Kerberos V5 per-message tokens in Rust (RFC 4121 section 4.2: MIC and Wrap tokens) with the
//! AES enctypes (RFC 3962: aes128/aes256-cts-hmac-sha1-96; RFC 8009: aes128-cts-hmac-sha256-128,
//! aes256-cts-hmac-sha384-192) on the keys of an established context. MIT's GSS-API establishes
//! the context and hands its keys over (as rpc.gssd hands them to the Linux kernel); the
//! messages are then signed and sealed here, with the CPU's AES and SHA instructions, without
//! a lock on the library and without copying a message into the library's buffers first.

use aes::cipher::consts::U16;
use aes::cipher::inout::InOutBuf;
use aes::cipher::{
    generic_array::GenericArray, BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit,
};
use hmac::{Hmac, Mac};

/// Why a token was refused or could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfxError {
    /// Not a token of this kind, or cut short.
    Defective,
    /// Its checksum does not verify.
    BadChecksum,
    /// An enctype this module does not implement.
    Enctype(u32),
}

/// The AES enctypes (RFC 3961 numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enctype {
    /// aes128-cts-hmac-sha1-96 (17).
    Aes128Sha1,
    /// aes256-cts-hmac-sha1-96 (18).
    Aes256Sha1,
    /// aes128-cts-hmac-sha256-128 (19).
    Aes128Sha256,
    /// aes256-cts-hmac-sha384-192 (20).
    Aes256Sha384,
}

impl Enctype {
    /// The enctype of RFC 3961 number `n`.
    pub fn from_number(n: u32) -> Result<Self, CfxError> {
        Ok(match n {
            17 => Self::Aes128Sha1,
            18 => Self::Aes256Sha1,
            19 => Self::Aes128Sha256,
            20 => Self::Aes256Sha384,
            n => return Err(CfxError::Enctype(n)),
        })
    }

    /// The enctype's name (RFC 3962, RFC 8009).
    pub fn name(self) -> &'static str {
        match self {
            Self::Aes128Sha1 => "aes128-cts-hmac-sha1-96",
            Self::Aes256Sha1 => "aes256-cts-hmac-sha1-96",
            Self::Aes128Sha256 => "aes128-cts-hmac-sha256-128",
            Self::Aes256Sha384 => "aes256-cts-hmac-sha384-192",
        }
    }

    fn key_len(self) -> usize {
        match self {
            Self::Aes128Sha1 | Self::Aes128Sha256 => 16,
            Self::Aes256Sha1 | Self::Aes256Sha384 => 32,
        }
    }

    /// Length of the checksum (truncated HMAC).
    fn mac_len(self) -> usize {
        match self {
            Self::Aes128Sha1 | Self::Aes256Sha1 => 12,
            Self::Aes128Sha256 => 16,
            Self::Aes256Sha384 => 24,
        }
    }

    fn sha2(self) -> bool {
        matches!(self, Self::Aes128Sha256 | Self::Aes256Sha384)
    }
}

/// AES with a key of either length (both round-key schedules are under 1 KiB: kept inline,
/// one context holds four).
#[derive(Clone)]
#[allow(clippy::large_enum_variant)]
enum Aes {
    A128(aes::Aes128),
    A256(aes::Aes256),
}

impl Aes {
    fn new(key: &[u8]) -> Self {
        match key.len() {
            16 => Aes::A128(aes::Aes128::new(GenericArray::from_slice(key))),
            _ => Aes::A256(aes::Aes256::new(GenericArray::from_slice(key))),
        }
    }

    fn encrypt(&self, b: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(b);
        match self {
            Aes::A128(a) => a.encrypt_block(b),
            Aes::A256(a) => a.encrypt_block(b),
        }
    }

    fn decrypt(&self, b: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(b);
        match self {
            Aes::A128(a) => a.decrypt_block(b),
            Aes::A256(a) => a.decrypt_block(b),
        }
    }

    /// CBC-encrypts whole blocks in place, chained from `iv`; returns the last ciphertext
    /// block. The chaining runs inside the cipher's backend (AES-NI round keys kept in
    /// registers) over the blocks where they lie.
    fn cbc_encrypt(&self, data: &mut [u8], iv: [u8; 16]) -> [u8; 16] {
        use cbc::cipher::{BlockEncryptMut, InnerIvInit};
        fn run<C>(c: &C, data: &mut [u8], iv: [u8; 16])
        where
            C: BlockEncrypt + aes::cipher::BlockCipher + Clone + BlockSizeUser<BlockSize = U16>,
        {
            let mut enc =
                cbc::Encryptor::<C>::inner_iv_init(c.clone(), GenericArray::from_slice(&iv));
            let (blocks, _) = InOutBuf::from(data).into_chunks::<U16>();
            enc.encrypt_blocks_inout_mut(blocks);
        }
        match self {
            Aes::A128(a) => run(a, data, iv),
            Aes::A256(a) => run(a, data, iv),
        }
        let mut last = iv;
        if data.len() >= 16 {
            last.copy_from_slice(&data[data.len() - 16..]);
        }
        last
    }

    /// CBC-decrypts whole blocks in place, chained from `iv` (the backend decrypts several
    /// blocks at once: unlike encryption, decryption does not chain through the cipher).
    fn cbc_decrypt(&self, data: &mut [u8], iv: [u8; 16]) {
        use cbc::cipher::{BlockDecryptMut, InnerIvInit};
        fn run<C>(c: &C, data: &mut [u8], iv: [u8; 16])
        where
            C: BlockDecrypt + aes::cipher::BlockCipher + Clone + BlockSizeUser<BlockSize = U16>,
        {
            let mut dec =
                cbc::Decryptor::<C>::inner_iv_init(c.clone(), GenericArray::from_slice(&iv));
            let (blocks, _) = InOutBuf::from(data).into_chunks::<U16>();
            dec.decrypt_blocks_inout_mut(blocks);
        }
        match self {
            Aes::A128(a) => run(a, data, iv),
            Aes::A256(a) => run(a, data, iv),
        }
    }
}

fn xor16(a: &mut [u8; 16], b: &[u8]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// AES-CBC with ciphertext stealing, the last two blocks swapped (RFC 3962 section 5, CBC-CS3),
/// IV zero, in place. `data` is at least one block long.
fn cts_encrypt(aes: &Aes, data: &mut [u8]) {
    let n = data.len();
    if n == 16 {
        let b: &mut [u8; 16] = (&mut data[..16]).try_into().expect("one block");
        aes.encrypt(b);
        return;
    }
    // full blocks before the last two (whole or partial)
    let last_len = n - 16 * ((n - 1) / 16); // 1..=16
    let head = n - 16 - last_len;
    let prev = match head {
        0 => [0u8; 16],
        _ => aes.cbc_encrypt(&mut data[..head], [0u8; 16]),
    };
    // the second-to-last block
    let mut pn1 = prev;
    xor16(&mut pn1, &data[head..head + 16]);
    aes.encrypt(&mut pn1);
    // the last, zero-padded, chained on it
    let mut pn = pn1;
    xor16(&mut pn, &data[head + 16..]);
    for (x, y) in pn[last_len..].iter_mut().zip(&pn1[last_len..]) {
        *x = *y; // xor with zero padding leaves pn1's bytes
    }
    aes.encrypt(&mut pn);
    data[head..head + 16].copy_from_slice(&pn);
    data[head + 16..].copy_from_slice(&pn1[..last_len]);
}

/// The inverse of [`cts_encrypt`], in place.
fn cts_decrypt(aes: &Aes, data: &mut [u8]) {
    let n = data.len();
    if n == 16 {
        let b: &mut [u8; 16] = (&mut data[..16]).try_into().expect("one block");
        aes.decrypt(b);
        return;
    }
    let last_len = n - 16 * ((n - 1) / 16);
    let head = n - 16 - last_len;
    let mut prev = [0u8; 16];
    if head > 0 {
        prev.copy_from_slice(&data[head - 16..head]);
        aes.cbc_decrypt(&mut data[..head], [0u8; 16]);
    }
    // C(n-1)' (sent first, the encryption of the padded last block) and the stolen tail
    let cn: [u8; 16] = (&data[head..head + 16]).try_into().expect("a block");
    let mut d = cn;
    aes.decrypt(&mut d); // = Pn xor (Cn-1 with its tail)
    let mut cn1 = [0u8; 16];
    cn1[..last_len].copy_from_slice(&data[head + 16..]);
    cn1[last_len..].copy_from_slice(&d[last_len..]);
    let mut pn = d;
    xor16(&mut pn, &cn1);
    let mut pn1 = cn1;
    aes.decrypt(&mut pn1);
    xor16(&mut pn1, &prev);
    data[head..head + 16].copy_from_slice(&pn1);
    data[head + 16..].copy_from_slice(&pn[..last_len]);
}

/// n-fold (RFC 3961 section 5.1) of `input` to 16 bytes.
fn nfold16(input: &[u8]) -> [u8; 16] {
    let (inlen, outlen) = (input.len(), 16usize);
    let lcm = {
        let (mut a, mut b) = (inlen, outlen);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        inlen * outlen / a
    };
    let mut out = [0u8; 16];
    let mut carry: u32 = 0;
    let inbits = inlen * 8;
    for i in (0..lcm).rev() {
        // the bit of the input copy i / inlen, rotated right by 13 bits per copy
        let msbit =
            ((inbits - 1) + ((inbits + 13) * (i / inlen)) + ((inlen - (i % inlen)) << 3)) % inbits;
        let hi = input[((inlen - 1) - (msbit >> 3)) % inlen] as u32;
        let lo = input[(inlen - (msbit >> 3)) % inlen] as u32;
        let byte = (((hi << 8) | lo) >> ((msbit & 7) + 1)) & 0xff;
        carry += byte + out[i % outlen] as u32;
        out[i % outlen] = (carry & 0xff) as u8;
        carry >>= 8;
    }
    if carry != 0 {
        for i in (0..outlen).rev() {
            carry += out[i] as u32;
            out[i] = (carry & 0xff) as u8;
            carry >>= 8;
        }
    }
    out
}

/// DK (RFC 3961 section 5.1) for the AES-SHA1 enctypes: the key derived from `base` for
/// `constant`.
fn dk_sha1(base: &[u8], constant: &[u8]) -> Vec<u8> {
    let aes = Aes::new(base);
    let mut block = nfold16(constant);
    let mut out = Vec::with_capacity(base.len() + 16);
    while out.len() < base.len() {
        aes.encrypt(&mut block);
        out.extend_from_slice(&block);
    }
    out.truncate(base.len());
    out
}

/// KDF-HMAC-SHA2 (RFC 8009 section 3): `bits` of key material from `base` for `label`.
fn kdf_sha2(et: Enctype, base: &[u8], label: &[u8], bits: u32) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = vec![&[0, 0, 0, 1], label, &[0]];
    let k = bits.to_be_bytes();
    parts.push(&k);
    let mut out = hmac_sha2(et, base, &parts);
    out.truncate(bits as usize / 8);
    out
}

fn hmac_sha2(et: Enctype, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    Keyed::new(et, key).mac(parts).as_ref().to_vec()
}

/// An HMAC with its key already absorbed (the inner and outer pads hashed once per context,
/// not once per message).
#[derive(Clone)]
enum Keyed {
    Sha1(Hmac<sha1::Sha1>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
}

/// An HMAC's output (at most SHA-384's 48 bytes), possibly truncated.
struct Tag {
    bytes: [u8; 48],
    len: usize,
}

impl AsRef<[u8]> for Tag {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Keyed {
    fn new(et: Enctype, key: &[u8]) -> Self {
        match et {
            Enctype::Aes256Sha384 => Keyed::Sha384(
                <Hmac<sha2::Sha384> as Mac>::new_from_slice(key).expect("any key length"),
            ),
            Enctype::Aes128Sha256 => Keyed::Sha256(
                <Hmac<sha2::Sha256> as Mac>::new_from_slice(key).expect("any key length"),
            ),
            _ => {
                Keyed::Sha1(<Hmac<sha1::Sha1> as Mac>::new_from_slice(key).expect("any key length"))
            }
        }
    }

    /// The HMAC of the concatenation of `parts`.
    fn mac(&self, parts: &[&[u8]]) -> Tag {
        fn run<M: Mac + Clone>(m: &M, parts: &[&[u8]]) -> Tag {
            let mut m = m.clone();
            for p in parts {
                m.update(p);
            }
            let out = m.finalize().into_bytes();
            let mut t = Tag {
                bytes: [0; 48],
                len: out.len(),
            };
            t.bytes[..out.len()].copy_from_slice(&out);
            t
        }
        match self {
            Keyed::Sha1(m) => run(m, parts),
            Keyed::Sha256(m) => run(m, parts),
            Keyed::Sha384(m) => run(m, parts),
        }
    }
}

/// The keys of one key usage: checksum (Kc), encryption (Ke) and integrity (Ki).
#[derive(Clone)]
struct UsageKeys {
    kc: Keyed,
    ke: Aes,
    ki: Keyed,
}

impl UsageKeys {
    fn derive(et: Enctype, base: &[u8], usage: u32) -> Self {
        let c = |x: u8| {
            let mut v = usage.to_be_bytes().to_vec();
            v.push(x);
            v
        };
        if et.sha2() {
            let (kc_bits, ke_bits, ki_bits) = match et {
                Enctype::Aes256Sha384 => (192, 256, 192),
                _ => (128, 128, 128),
            };
            UsageKeys {
                kc: Keyed::new(et, &kdf_sha2(et, base, &c(0x99), kc_bits)),
                ke: Aes::new(&kdf_sha2(et, base, &c(0xaa), ke_bits)),
                ki: Keyed::new(et, &kdf_sha2(et, base, &c(0x55), ki_bits)),
            }
        } else {
            UsageKeys {
                kc: Keyed::new(et, &dk_sha1(base, &c(0x99))),
                ke: Aes::new(&dk_sha1(base, &c(0xaa))),
                ki: Keyed::new(et, &dk_sha1(base, &c(0x55))),
            }
        }
    }
}

/// The checksum (keyed, truncated) of the concatenation of `parts`.
fn checksum(et: Enctype, key: &Keyed, parts: &[&[u8]]) -> Tag {
    let mut t = key.mac(parts);
    t.len = et.mac_len();
    t
}

/// RFC 3961 encryption of `plain` (confounder first), appended to `out`: the ciphertext and
/// its checksum. The plaintext is copied once, into `out`, and encrypted there.
fn encrypt_into(
    et: Enctype,
    k: &UsageKeys,
    confounder: [u8; 16],
    plain: &[&[u8]],
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.extend_from_slice(&confounder);
    for p in plain {
        out.extend_from_slice(p);
    }
    let mac = if et.sha2() {
        None
    } else {
        // RFC 3962: the HMAC is over the plaintext (with its confounder)
        Some(checksum(et, &k.ki, &[&out[start..]]))
    };
    cts_encrypt(&k.ke, &mut out[start..]);
    let mac = match mac {
        Some(m) => m,
        // RFC 8009: over the IV (zero) and the ciphertext
        None => checksum(et, &k.ki, &[&[0u8; 16], &out[start..]]),
    };
    out.extend_from_slice(mac.as_ref());
}

/// The inverse of [`encrypt`]: the plaintext without its confounder.
fn decrypt(
    et: Enctype,
    k: &UsageKeys,
    data: &mut [u8],
) -> Result<std::ops::Range<usize>, CfxError> {
    let h = et.mac_len();
    if data.len() < 16 + h {
        return Err(CfxError::Defective);
    }
    let (ct, mac) = data.split_at_mut(data.len() - h);
    if et.sha2() {
        let want = checksum(et, &k.ki, &[&[0u8; 16], ct]);
        if !constant_eq(want.as_ref(), mac) {
            return Err(CfxError::BadChecksum);
        }
        cts_decrypt(&k.ke, ct);
    } else {
        cts_decrypt(&k.ke, ct);
        let want = checksum(et, &k.ki, &[ct]);
        if !constant_eq(want.as_ref(), mac) {
            return Err(CfxError::BadChecksum);
        }
    }
    Ok(16..ct.len())
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Token flags (RFC 4121 section 4.2.2).
const SENT_BY_ACCEPTOR: u8 = 0x01;
const SEALED: u8 = 0x02;
const ACCEPTOR_SUBKEY: u8 = 0x04;

/// Key usages (RFC 4121 section 2).
const ACCEPTOR_SEAL: u32 = 22;
const ACCEPTOR_SIGN: u32 = 23;
const INITIATOR_SEAL: u32 = 24;
const INITIATOR_SIGN: u32 = 25;

/// One side of an established context: its key, whether it is the acceptor, its send sequence
/// number (the only thing a token changes: tokens are made and checked by several threads at
/// once).
pub struct Cfx {
    et: Enctype,
    acceptor: bool,
    acceptor_subkey: bool,
    send_seq: std::sync::atomic::AtomicU64,
    sign_out: UsageKeys,
    sign_in: UsageKeys,
    seal_out: UsageKeys,
    seal_in: UsageKeys,
}

impl Cfx {
    /// A context side with key `key` of enctype number `enctype`; `acceptor_subkey`: the key
    /// is the acceptor's subkey (the flag tokens carry).
    pub fn new(
        enctype: u32,
        key: &[u8],
        acceptor: bool,
        acceptor_subkey: bool,
        send_seq: u64,
    ) -> Result<Self, CfxError> {
        let et = Enctype::from_number(enctype)?;
        if key.len() != et.key_len() {
            return Err(CfxError::Defective);
        }
        let (sign_out, sign_in, seal_out, seal_in) = match acceptor {
            true => (ACCEPTOR_SIGN, INITIATOR_SIGN, ACCEPTOR_SEAL, INITIATOR_SEAL),
            false => (INITIATOR_SIGN, ACCEPTOR_SIGN, INITIATOR_SEAL, ACCEPTOR_SEAL),
        };
        let d = |u| UsageKeys::derive(et, key, u);
        Ok(Self {
            et,
            acceptor,
            acceptor_subkey,
            send_seq: std::sync::atomic::AtomicU64::new(send_seq),
            sign_out: d(sign_out),
            sign_in: d(sign_in),
            seal_out: d(seal_out),
            seal_in: d(seal_in),
        })
    }

    /// The enctype of the context's key.
    pub fn enctype(&self) -> Enctype {
        self.et
    }

    fn out_flags(&self, sealed: bool) -> u8 {
        let mut f = 0;
        if self.acceptor {
            f |= SENT_BY_ACCEPTOR;
        }
        if sealed {
            f |= SEALED;
        }
        if self.acceptor_subkey {
            f |= ACCEPTOR_SUBKEY;
        }
        f
    }

    fn next_seq(&self) -> u64 {
        self.send_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The MIC token of the concatenation of `parts` (a message kept in pieces need not be
    /// joined first).
    pub fn get_mic(&self, parts: &[&[u8]]) -> Vec<u8> {
        let mut hdr = [0u8; 16];
        hdr[0] = 0x04;
        hdr[1] = 0x04;
        hdr[2] = self.out_flags(false);
        hdr[3..8].fill(0xff);
        hdr[8..].copy_from_slice(&self.next_seq().to_be_bytes());
        let mut all: Vec<&[u8]> = parts.to_vec();
        all.push(&hdr);
        let mac = checksum(self.et, &self.sign_out.kc, &all);
        let mut tok = Vec::with_capacity(16 + mac.len);
        tok.extend_from_slice(&hdr);
        tok.extend_from_slice(mac.as_ref());
        tok
    }

    /// Checks a MIC token of the concatenation of `parts` from the other side.
    pub fn verify_mic(&self, parts: &[&[u8]], tok: &[u8]) -> Result<(), CfxError> {
        if tok.len() != 16 + self.et.mac_len() || tok[0] != 0x04 || tok[1] != 0x04 {
            return Err(CfxError::Defective);
        }
        let flags = tok[2];
        if (flags & SENT_BY_ACCEPTOR != 0) == self.acceptor || tok[3..8] != [0xff; 5] {
            return Err(CfxError::Defective);
        }
        let mut all: Vec<&[u8]> = parts.to_vec();
        all.push(&tok[..16]);
        let want = checksum(self.et, &self.sign_in.kc, &all);
        match constant_eq(want.as_ref(), &tok[16..]) {
            true => Ok(()),
            false => Err(CfxError::BadChecksum),
        }
    }

    /// A sealed (encrypted) Wrap token of the concatenation of `parts`, rotation count 0.
    pub fn wrap(&self, parts: &[&[u8]], confounder: [u8; 16]) -> Vec<u8> {
        let mut hdr = [0u8; 16];
        hdr[0] = 0x05;
        hdr[1] = 0x04;
        hdr[2] = self.out_flags(true);
        hdr[3] = 0xff;
        // EC 0: AES needs no filler; RRC 0
        hdr[8..].copy_from_slice(&self.next_seq().to_be_bytes());
        let mut plain: Vec<&[u8]> = parts.to_vec();
        plain.push(&hdr);
        let len: usize = plain.iter().map(|p| p.len()).sum();
        let mut tok = Vec::with_capacity(16 + 16 + len + self.et.mac_len());
        tok.extend_from_slice(&hdr);
        encrypt_into(self.et, &self.seal_out, confounder, &plain, &mut tok);
        tok
    }

    /// The data of a sealed Wrap token from the other side, decrypted in place in `tok`: the
    /// range of `tok` it occupies.
    pub fn unwrap(&self, tok: &mut [u8]) -> Result<std::ops::Range<usize>, CfxError> {
        if tok.len() < 16 || tok[0] != 0x05 || tok[1] != 0x04 || tok[3] != 0xff {
            return Err(CfxError::Defective);
        }
        let flags = tok[2];
        if (flags & SENT_BY_ACCEPTOR != 0) == self.acceptor || flags & SEALED == 0 {
            return Err(CfxError::Defective);
        }
        let ec = u16::from_be_bytes([tok[4], tok[5]]) as usize;
        let rrc = u16::from_be_bytes([tok[6], tok[7]]) as usize;
        let (hdr, body) = tok.split_at_mut(16);
        if !body.is_empty() {
            let r = rrc % body.len();
            body.rotate_left(r);
        }
        let plain = decrypt(self.et, &self.seal_in, body)?;
        // the plaintext ends with the filler and a copy of the header (its RRC zero)
        if plain.len() < ec + 16 {
            return Err(CfxError::Defective);
        }
        let copy = &body[plain.end - 16..plain.end];
        if copy[..6] != hdr[..6] || copy[6..8] != [0, 0] || copy[8..] != hdr[8..] {
            return Err(CfxError::Defective);
        }
        Ok(16 + plain.start..16 + plain.end - 16 - ec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn nfold_matches_rfc3961_vectors() {
        // RFC 3961 appendix A.1: 128-fold("kerberos")
        assert_eq!(
            nfold16(b"kerberos").to_vec(),
            hex("6b65726265726f737b9b5b2b93132b93")
        );
    }

    #[test]
    fn cts_round_trips_every_length() {
        let aes = Aes::new(b"chicken teriyaki");
        for n in 16..100 {
            let plain: Vec<u8> = (0..n as u8).collect();
            let mut b = plain.clone();
            cts_encrypt(&aes, &mut b);
            assert_ne!(b, plain);
            cts_decrypt(&aes, &mut b);
            assert_eq!(b, plain, "length {n}");
        }
    }

    #[test]
    fn cts_matches_rfc3962_vectors() {
        // RFC 3962 appendix B, key "chicken teriyaki", IV 0
        let aes = Aes::new(b"chicken teriyaki");
        let input = hex("4920776f756c64206c696b652074686520");
        let mut b = input.clone();
        cts_encrypt(&aes, &mut b);
        assert_eq!(b, hex("c6353568f2bf8cb4d8a580362da7ff7f97"));
    }

    #[test]
    fn threads_share_one_context_and_its_sequence_numbers_stay_unique() {
        let key = [3u8; 32];
        let acc = Cfx::new(18, &key, true, false, 0).unwrap();
        let ini = Cfx::new(18, &key, false, false, 0).unwrap();
        let seqs: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let (acc, ini) = (&acc, &ini);
                    s.spawn(move || {
                        (0..50)
                            .map(|i| {
                                let msg = vec![t as u8; 100 + i];
                                let mut tok = acc.wrap(&[&msg], [t as u8; 16]);
                                let seq = u64::from_be_bytes(tok[8..16].try_into().unwrap());
                                let r = ini.unwrap(&mut tok).unwrap();
                                assert_eq!(&tok[r], &msg[..]);
                                let mic = acc.get_mic(&[&msg]);
                                ini.verify_mic(&[&msg], &mic).unwrap();
                                seq
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let unique: std::collections::HashSet<_> = seqs.iter().collect();
        assert_eq!(
            unique.len(),
            seqs.len(),
            "every Wrap token has a sequence number of its own"
        );
    }

    #[test]
    fn tokens_of_one_side_verify_on_the_other() {
        for et in [17, 18, 19, 20] {
            let key: Vec<u8> = (0..Enctype::from_number(et).unwrap().key_len() as u8).collect();
            let acc = Cfx::new(et, &key, true, true, 5).unwrap();
            let ini = Cfx::new(et, &key, false, true, 9).unwrap();
            let mic = acc.get_mic(&[b"abc", b"def"]);
            ini.verify_mic(&[b"abcdef"], &mic).unwrap();
            assert_eq!(
                ini.verify_mic(&[b"abcdeg"], &mic),
                Err(CfxError::BadChecksum)
            );
            assert_eq!(
                acc.verify_mic(&[b"abcdef"], &mic),
                Err(CfxError::Defective),
                "own token"
            );
            for len in [0usize, 1, 15, 16, 17, 100, 4096] {
                let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut tok = ini.wrap(&[&msg], [7; 16]);
                let r = acc.unwrap(&mut tok).unwrap();
                assert_eq!(&tok[r], &msg[..], "enctype {et} length {len}");
                let mut tok = ini.wrap(&[&msg], [7; 16]);
                let n = tok.len();
                tok[n - 1] ^= 1;
                assert_eq!(acc.unwrap(&mut tok), Err(CfxError::BadChecksum));
            }
        }
    }
}
