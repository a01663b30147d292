//! The MIT GSS-API calls libgssapi's safe binding does not offer: accepting a context with a
//! raw context handle, and handing its keys over (`gss_krb5_export_lucid_sec_context`, what
//! rpc.gssd does for the Linux kernel's RPCSEC_GSS), so that messages are signed and sealed in
//! Rust ([`crate::cfx`]). Every `unsafe` block of the crate is here.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::ptr;

use libgssapi_sys as g;
use sunrpc::gss::mech::GssError;

unsafe extern "C" {
    fn gss_krb5_export_lucid_sec_context(
        minor: *mut u32,
        ctx: *mut g::gss_ctx_id_t,
        version: u32,
        kctx: *mut *mut c_void,
    ) -> u32;
    fn gss_krb5_free_lucid_sec_context(minor: *mut u32, kctx: *mut c_void) -> u32;
}

/// `gss_krb5_lucid_key_t` (gssapi/gssapi_krb5.h).
#[repr(C)]
struct LucidKey {
    kind: u32,
    length: u32,
    data: *mut c_void,
}

/// `gss_krb5_rfc1964_keydata_t`.
#[repr(C)]
struct Rfc1964Keydata {
    sign_alg: u32,
    seal_alg: u32,
    ctx_key: LucidKey,
}

/// `gss_krb5_cfx_keydata_t`.
#[repr(C)]
struct CfxKeydata {
    have_acceptor_subkey: u32,
    ctx_key: LucidKey,
    acceptor_subkey: LucidKey,
}

/// `gss_krb5_lucid_context_v1_t`.
#[repr(C)]
struct LucidV1 {
    version: u32,
    initiate: u32,
    endtime: u32,
    send_seq: u64,
    recv_seq: u64,
    protocol: u32,
    rfc1964_kd: Rfc1964Keydata,
    cfx_kd: CfxKeydata,
}

/// What a context hands over: its key and sequence numbers.
#[derive(Debug)]
pub struct Lucid {
    /// RFC 4121 (1) or RFC 1964 (0) tokens.
    pub protocol: u32,
    /// The key's enctype.
    pub enctype: u32,
    /// The key.
    pub key: Vec<u8>,
    /// The key is the acceptor's subkey.
    pub acceptor_subkey: bool,
    /// The next sequence number to send.
    pub send_seq: u64,
}

fn status(major: u32, minor: u32) -> Result<(), GssError> {
    // the routine-error and calling-error fields; supplementary bits are not errors
    match major & 0xffff_0000 {
        0 => Ok(()),
        _ => Err(GssError { major, minor }),
    }
}

/// Copies a buffer the library allocated, and frees it.
fn take_buffer(b: &mut g::gss_buffer_desc) -> Vec<u8> {
    let v = match b.value.is_null() {
        true => Vec::new(),
        // SAFETY: the library filled `b` with `length` bytes at `value`.
        false => unsafe { std::slice::from_raw_parts(b.value as *const u8, b.length) }.to_vec(),
    };
    let mut minor = 0;
    // SAFETY: `b` is a buffer the library allocated (or empty), released once.
    unsafe { g::gss_release_buffer(&mut minor, b) };
    v
}

/// Acceptor credentials: for one service principal, or the default (every key of the keytab
/// KRB5_KTNAME names).
pub struct AcceptorCred(g::gss_cred_id_t);

// SAFETY: a credential handle is read-only after acquisition; MIT allows its concurrent use
// by contexts of several threads.
unsafe impl Send for AcceptorCred {}
// SAFETY: as for Send.
unsafe impl Sync for AcceptorCred {}

/// Which kind of name a string is.
#[derive(Clone, Copy)]
enum NameKind {
    /// `service@host`.
    Service,
    /// A principal (`alice`, `alice@REALM`).
    User,
}

/// A name imported from a string, released on drop.
struct Name(g::gss_name_t);

impl Name {
    fn import(s: &str, kind: NameKind) -> Result<Self, GssError> {
        let (mut minor, mut name) = (0, ptr::null_mut());
        let mut buf = g::gss_buffer_desc {
            length: s.len(),
            value: s.as_ptr() as *mut c_void,
        };
        // SAFETY: `buf` points at `s`, alive for the call, which copies it; the name types
        // are the library's static OIDs.
        let major = unsafe {
            let oid = match kind {
                NameKind::Service => g::GSS_C_NT_HOSTBASED_SERVICE,
                NameKind::User => g::GSS_C_NT_USER_NAME,
            };
            g::gss_import_name(&mut minor, &mut buf, oid, &mut name)
        };
        status(major, minor)?;
        Ok(Name(name))
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let mut minor = 0;
        // SAFETY: an imported name, released once.
        unsafe { g::gss_release_name(&mut minor, &mut self.0) };
    }
}

/// Credentials of `name` (or the default ones) for `usage` (1 initiate, 2 accept).
fn acquire(name: Option<&Name>, usage: i32) -> Result<g::gss_cred_id_t, GssError> {
    let (mut minor, mut cred) = (0, ptr::null_mut());
    // SAFETY: out-pointers are to locals; the name is null or a live imported name.
    let major = unsafe {
        g::gss_acquire_cred(
            &mut minor,
            name.map_or(ptr::null_mut(), |n| n.0),
            0,
            ptr::null_mut(),
            usage as _,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    status(major, minor)?;
    Ok(cred)
}

/// Initiator credentials of `name` (or the keytab's first principal) from the client keytab
/// `keytab`, their tickets kept in credential cache `ccache` (a MEMORY: one, so that no user's
/// cache is touched): MIT gets and renews them from the keytab's keys itself.
fn acquire_from_keytab(
    name: Option<&Name>,
    keytab: &str,
    ccache: &str,
) -> Result<g::gss_cred_id_t, GssError> {
    let bad = |_| GssError::FAILURE;
    let keytab = std::ffi::CString::new(keytab).map_err(bad)?;
    let ccache = std::ffi::CString::new(ccache).map_err(bad)?;
    let mut elements = [
        g::gss_key_value_element_desc {
            key: c"client_keytab".as_ptr(),
            value: keytab.as_ptr(),
        },
        g::gss_key_value_element_desc {
            key: c"ccache".as_ptr(),
            value: ccache.as_ptr(),
        },
    ];
    let store = g::gss_key_value_set_desc {
        count: elements.len() as u32,
        elements: elements.as_mut_ptr(),
    };
    let (mut minor, mut cred) = (0, ptr::null_mut());
    // SAFETY: the store's strings live until the call returns (the library copies what it
    // keeps); out-pointers are to locals; the name is null or a live imported name.
    let major = unsafe {
        g::gss_acquire_cred_from(
            &mut minor,
            name.map_or(ptr::null_mut(), |n| n.0),
            0,
            ptr::null_mut(),
            1,
            &store,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    status(major, minor)?;
    Ok(cred)
}

fn release_cred(cred: &mut g::gss_cred_id_t) {
    if !cred.is_null() {
        let mut minor = 0;
        // SAFETY: a credential acquired by `acquire`, released once.
        unsafe { g::gss_release_cred(&mut minor, cred) };
    }
}

fn delete(ctx: &mut g::gss_ctx_id_t) {
    if !ctx.is_null() {
        let mut minor = 0;
        // SAFETY: a context of ours not handed over; deleted once.
        unsafe { g::gss_delete_sec_context(&mut minor, ctx, ptr::null_mut()) };
    }
}

impl AcceptorCred {
    /// Credentials for `service` (`nfs@host`), or the default ones.
    pub fn acquire(service: Option<&str>) -> Result<Self, GssError> {
        let name = service
            .map(|s| Name::import(s, NameKind::Service))
            .transpose()?;
        Ok(AcceptorCred(acquire(name.as_ref(), 2)?))
    }
}

impl Drop for AcceptorCred {
    fn drop(&mut self) {
        release_cred(&mut self.0);
    }
}

/// Whom a server's own initiator context is made as.
#[derive(Clone, Copy)]
pub enum OwnName<'a> {
    /// A principal (`nfs/server.example.com@REALM`).
    Principal(&'a str),
    /// A service (`nfs@server.example.com`).
    Service(&'a str),
    /// The keytab's first principal.
    First,
}

/// An initiator context being established (rnfs's own clients), with its credentials.
pub struct InitiatorCtx {
    ctx: g::gss_ctx_id_t,
    cred: g::gss_cred_id_t,
    target: Name,
}

// SAFETY: used by one thread at a time (its owner holds it under a lock or alone).
unsafe impl Send for InitiatorCtx {}

impl InitiatorCtx {
    /// A context with `service` (`nfs@host`) as `user`, or as the default principal.
    pub fn new(user: Option<&str>, service: &str) -> Result<Self, GssError> {
        let target = Name::import(service, NameKind::Service)?;
        let cred = match user {
            Some(u) => acquire(Some(&Name::import(u, NameKind::User)?), 1)?,
            None => ptr::null_mut(),
        };
        Ok(InitiatorCtx {
            ctx: ptr::null_mut(),
            cred,
            target,
        })
    }

    /// A context with the principal `target` (`nfs/host@REALM`, a client's callback service)
    /// as `own`, with credentials from client keytab `keytab` and tickets in `ccache`.
    pub fn from_keytab(
        keytab: &str,
        ccache: &str,
        own: OwnName<'_>,
        target: &str,
    ) -> Result<Self, GssError> {
        let target = Name::import(target, NameKind::User)?;
        let own = match own {
            OwnName::Principal(p) => Some(Name::import(p, NameKind::User)?),
            OwnName::Service(s) => Some(Name::import(s, NameKind::Service)?),
            OwnName::First => None,
        };
        let cred = acquire_from_keytab(own.as_ref(), keytab, ccache)?;
        Ok(InitiatorCtx {
            ctx: ptr::null_mut(),
            cred,
            target,
        })
    }

    /// One step: the server's last token in (none at first); the token for the server and
    /// whether the context is established.
    pub fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        let mut minor = 0;
        let mut input = g::gss_buffer_desc {
            length: token.map_or(0, |t| t.len()),
            value: token.map_or(ptr::null_mut(), |t| t.as_ptr() as *mut c_void),
        };
        let mut out = g::gss_buffer_desc {
            length: 0,
            value: ptr::null_mut(),
        };
        // mutual authentication, integrity and confidentiality; no replay or sequence
        // detection (RPCSEC_GSS has its own window), as the Linux client asks
        let flags = 2 | 32 | 16;
        // SAFETY: the context handle is ours (null at first); `input` points at the token
        // for the call; `target` is a live name; out-pointers are to locals.
        let major = unsafe {
            g::gss_init_sec_context(
                &mut minor,
                self.cred,
                &mut self.ctx,
                self.target.0,
                ptr::null_mut(),
                flags,
                0,
                ptr::null_mut(),
                &mut input,
                ptr::null_mut(),
                &mut out,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let reply = take_buffer(&mut out);
        status(major, minor)?;
        Ok((reply, major & 1 == 0))
    }

    /// Hands the established context's keys over; the context is gone afterwards.
    pub fn export(&mut self) -> Result<Lucid, GssError> {
        export(&mut self.ctx)
    }
}

impl Drop for InitiatorCtx {
    fn drop(&mut self) {
        delete(&mut self.ctx);
        release_cred(&mut self.cred);
    }
}

/// The peer of a context once established.
#[derive(Debug)]
pub struct Established {
    /// The initiator's principal as displayed.
    pub principal: String,
    /// Its local name under krb5's auth_to_local rules, if it has one.
    pub local_name: Option<String>,
    /// Seconds the context stays valid.
    pub lifetime_secs: u32,
    /// The principal the initiator authenticated to (one of the keytab's), as displayed.
    pub acceptor: Option<String>,
}

/// The displayed form of `name`; None when the library cannot display it.
fn display(name: g::gss_name_t) -> Option<String> {
    let (mut minor, mut buf) = (
        0,
        g::gss_buffer_desc {
            length: 0,
            value: ptr::null_mut(),
        },
    );
    // SAFETY: `name` is a live name the caller holds; `buf` is filled by the library and freed
    // by take_buffer.
    let major = unsafe { g::gss_display_name(&mut minor, name, &mut buf, ptr::null_mut()) };
    status(major, minor).ok()?;
    Some(String::from_utf8_lossy(&take_buffer(&mut buf)).into_owned())
}

/// An acceptor context being established.
pub struct AcceptorCtx(g::gss_ctx_id_t);

// SAFETY: a context is used by one thread at a time (its owner holds it under a lock).
unsafe impl Send for AcceptorCtx {}
// SAFETY: every use of the handle takes `&mut self` (step, export, drop): a shared reference
// gives no access to it.
unsafe impl Sync for AcceptorCtx {}

impl Default for AcceptorCtx {
    fn default() -> Self {
        AcceptorCtx(ptr::null_mut())
    }
}

impl AcceptorCtx {
    /// One step with the client's `token`: the token to answer and, once established, who
    /// the peer is.
    pub fn step(
        &mut self,
        cred: &AcceptorCred,
        token: &[u8],
    ) -> Result<(Vec<u8>, Option<Established>), GssError> {
        let mut minor = 0;
        let mut input = g::gss_buffer_desc {
            length: token.len(),
            value: token.as_ptr() as *mut c_void,
        };
        let mut src: g::gss_name_t = ptr::null_mut();
        let mut mech: g::gss_OID = ptr::null_mut();
        let mut out = g::gss_buffer_desc {
            length: 0,
            value: ptr::null_mut(),
        };
        let (mut flags, mut time_rec) = (0u32, 0u32);
        // SAFETY: `input` points at `token` for the call; the context handle is ours (null
        // at first); every out-pointer is to a local.
        let major = unsafe {
            g::gss_accept_sec_context(
                &mut minor,
                &mut self.0,
                cred.0,
                &mut input,
                ptr::null_mut(),
                &mut src,
                &mut mech,
                &mut out,
                &mut flags,
                &mut time_rec,
                ptr::null_mut(),
            )
        };
        let reply = take_buffer(&mut out);
        let done = status(major, minor).map(|()| major & 1 == 0); // GSS_S_CONTINUE_NEEDED
        let peer = match done {
            Ok(true) if !src.is_null() => Some(self.peer(src, mech, time_rec)),
            _ => None,
        };
        if !src.is_null() {
            let mut m = 0;
            // SAFETY: the library returned `src`; released once.
            unsafe { g::gss_release_name(&mut m, &mut src) };
        }
        done?;
        Ok((reply, peer))
    }

    fn peer(&self, src: g::gss_name_t, mech: g::gss_OID, time_rec: u32) -> Established {
        let principal = display(src).unwrap_or_default();
        let mut minor = 0;
        let mut target: g::gss_name_t = ptr::null_mut();
        // SAFETY: the context is established and ours; only the target name is asked for (the
        // other out-pointers are null, which the call allows).
        let major = unsafe {
            g::gss_inquire_context(
                &mut minor,
                self.0,
                ptr::null_mut(),
                &mut target,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let acceptor = match status(major, minor) {
            Ok(()) if !target.is_null() => display(target),
            _ => None,
        };
        if !target.is_null() {
            let mut m = 0;
            // SAFETY: the library returned `target`; released once.
            unsafe { g::gss_release_name(&mut m, &mut target) };
        }
        let mut local = g::gss_buffer_desc {
            length: 0,
            value: ptr::null_mut(),
        };
        // SAFETY: as above; `mech` is the mechanism OID the library returned for the context.
        let major = unsafe { g::gss_localname(&mut minor, src, mech, &mut local) };
        let local_name = status(major, minor)
            .ok()
            .map(|()| String::from_utf8_lossy(&take_buffer(&mut local)).into_owned());
        Established {
            principal,
            local_name,
            lifetime_secs: time_rec,
            acceptor,
        }
    }

    /// Hands the established context's keys over; the context is gone afterwards.
    pub fn export(&mut self) -> Result<Lucid, GssError> {
        export(&mut self.0)
    }
}

/// The keys of established context `ctx`, which is gone afterwards.
fn export(ctx: &mut g::gss_ctx_id_t) -> Result<Lucid, GssError> {
    let mut minor = 0;
    let mut p: *mut c_void = ptr::null_mut();
    // SAFETY: the handle is an established context of ours; the library frees it and
    // sets the handle to null, and fills `p` with a version 1 lucid context.
    let major = unsafe { gss_krb5_export_lucid_sec_context(&mut minor, ctx, 1, &mut p) };
    status(major, minor)?;
    // SAFETY: on success `p` is a `gss_krb5_lucid_context_v1_t`, which LucidV1 mirrors.
    let l = unsafe { &*(p as *const LucidV1) };
    let key_of = |k: &LucidKey| match k.data.is_null() {
        true => Vec::new(),
        // SAFETY: the key's `length` bytes are at `data`, owned by the lucid context.
        false => {
            unsafe { std::slice::from_raw_parts(k.data as *const u8, k.length as usize) }.to_vec()
        }
    };
    let (key, enctype, acceptor_subkey) = match (l.protocol, l.cfx_kd.have_acceptor_subkey) {
        (1, 1) => (
            key_of(&l.cfx_kd.acceptor_subkey),
            l.cfx_kd.acceptor_subkey.kind,
            true,
        ),
        (1, _) => (key_of(&l.cfx_kd.ctx_key), l.cfx_kd.ctx_key.kind, false),
        _ => (
            key_of(&l.rfc1964_kd.ctx_key),
            l.rfc1964_kd.ctx_key.kind,
            false,
        ),
    };
    let out = Lucid {
        protocol: l.protocol,
        enctype,
        key,
        acceptor_subkey,
        send_seq: l.send_seq,
    };
    // SAFETY: `p` came from the export above and is freed once.
    unsafe { gss_krb5_free_lucid_sec_context(&mut minor, p) };
    Ok(out)
}

impl Drop for AcceptorCtx {
    fn drop(&mut self) {
        delete(&mut self.0);
    }
}
