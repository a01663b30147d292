//! Network Lock Manager (NLM) version 4 and Network Status Monitor (NSM) version 1 wire types,
//! generated from Sun's rpcsvc XDR (`nlm_prot.x`, `sm_inter.x`).
//!
//! Every type, constant and codec here is generated at build time by `rnfs-xdrgen` from
//! `spec/nlm_deps.x`, `spec/nlm_prot.x` and `spec/sm_inter.x` in the repository (see
//! `spec/README.md`), except the limits that are tighter than the XDR's own bounds
//! ([`NLM4_FHSIZE`], [`NLM4_MAX_NETOBJ`], [`NLM4_MAX_CALLER_NAME`]; in `src/limits.rs`), which
//! the build script gives the generator and which are exported here for the code that fills
//! the same fields. `nlm_prot.x` holds NLM version 4 only (program `NLM_PROG` = 100021, version
//! [`NLM_VERS4`]), plus the version 1-3 status enum [`NlmStats`], whose `nlm_denied` labels the
//! arm of [`Nlm4Testrply`]; `sm_inter.x` holds NSM version 1 (program `SM_PROG` = 100024,
//! version [`SM_VERS`]).
//!
//! Names follow the `.x`: types in CamelCase (`nlm4_lockargs` is [`Nlm4Lockargs`], `mon_id` is
//! [`MonId`], `stat_chge` is [`StatChge`]), fields in snake_case (`priv` is `r#priv`),
//! constants unchanged (`NLM4_LOCK`, `NLM4_GRANTED_MSG`, `SM_NOTIFY`, and the open enums'
//! `Nlm4Stats::nlm4_denied`, `SmRes::stat_succ`). The procedures' argument and result types:
//!
//! * NLM4: TEST and GRANTED take [`Nlm4Testargs`]; LOCK and NM_LOCK [`Nlm4Lockargs`]; CANCEL
//!   [`Nlm4Cancargs`]; UNLOCK [`Nlm4Unlockargs`]; SHARE and UNSHARE [`Nlm4Shareargs`] (answered
//!   with [`Nlm4Shareres`]); FREE_ALL [`Nlm4Notify`]. TEST answers [`Nlm4Testres`], the others
//!   [`Nlm4Res`]. The `_MSG` procedures (6-10) take the same arguments as their synchronous
//!   forms and have no reply; the `_RES` procedures (11-15) carry the result back as their
//!   argument ([`Nlm4Testres`] or [`Nlm4Res`]) and have no reply either.
//! * NSM: SM_STAT takes [`SmName`], SM_MON [`Mon`] (both answered with [`SmStatRes`]),
//!   SM_UNMON [`MonId`], SM_UNMON_ALL [`MyId`] (both answered with [`SmStat`]), SM_NOTIFY
//!   [`StatChge`]; SM_SIMU_CRASH has no argument. When a monitored host's state changes,
//!   statd calls the procedure named in [`MyId`] with an [`SmStatus`] (`mon_name`, `state`
//!   and the 16 `priv` bytes given to SM_MON).
//!
//! The generator's settings give the types the shape handlers want:
//!
//! * `nlm4_stats` and `sm_res` are open (`Nlm4Stats(pub u32)`, `SmRes(pub u32)` with a
//!   constant per value), so a status this code does not know is carried; the other enums
//!   ([`FshMode`], [`FshAccess`], [`NlmStats`]) reject unknown values;
//! * NLM4_TEST's result union is [`Nlm4Testrply::Denied`]`(holder)` or
//!   [`Nlm4Testrply::Other`]`(status)` (`nlm4_granted` or a failure);
//! * `netobj` (cookies, owner handles, file handles) is [`Netobj`], a `bytes::Bytes`.
//!
//! Decoding is zero-copy for variable-length opaque data and strings (`bytes::Bytes` slices of
//! the received buffer) and checks every length against its bound before allocating: cookies
//! and owner handles up to [`NLM4_MAX_NETOBJ`] (`MAX_NETOBJ_SZ`, 1024 bytes), file handles up
//! to [`NLM4_FHSIZE`] (64, NFSv3's), `caller_name` up to [`NLM4_MAX_CALLER_NAME`]
//! (`LM_MAXSTRLEN`, 1024), FREE_ALL's `name` up to `MAXNAMELEN` (1025) and NSM's names up to
//! `SM_MAXSTRLEN` (1024). `priv` is a `[u8; 16]`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod limits;
pub use limits::*;

include!(concat!(env!("OUT_DIR"), "/nlm_wire.rs"));

#[cfg(test)]
mod tests;
