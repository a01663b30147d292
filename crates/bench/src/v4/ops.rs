//! The operations of a COMPOUND, built as the generated `nfs_argop4` values.

use super::*;

/// The operations of one COMPOUND, in order, after its SEQUENCE.
pub struct Ops {
    /// SEQUENCE (its arguments filled in by [`V4::compound`] once a slot is taken), then the
    /// operations.
    args: Vec<A>,
    /// The reply's shape, for RPC-over-RDMA (set by READ, READ_PLUS and READDIR, which must
    /// be the last operation).
    expect: Expect,
}

impl Default for Ops {
    fn default() -> Self {
        Self::new()
    }
}

impl Ops {
    /// No operations.
    pub fn new() -> Ops {
        // Room for the longest COMPOUND sent but a path walk: SEQUENCE, PUTFH, OPEN, GETFH,
        // CLOSE.
        let mut args = Vec::with_capacity(5);
        args.push(A::OpSequence(w::Sequence4args {
            sa_sessionid: [0; 16],
            sa_sequenceid: 0,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        }));
        Ops {
            args,
            expect: Expect::Small,
        }
    }

    fn op(mut self, a: A) -> Ops {
        self.args.push(a);
        self
    }

    /// PUTROOTFH.
    pub fn putrootfh(self) -> Ops {
        self.op(A::OpPutrootfh)
    }

    /// PUTFH.
    pub fn putfh(self, fh: &Bytes) -> Ops {
        self.op(A::OpPutfh(w::Putfh4args { object: fh.clone() }))
    }

    /// LOOKUP.
    pub fn lookup(self, name: &str) -> Ops {
        self.op(A::OpLookup(w::Lookup4args {
            objname: component(name),
        }))
    }

    /// GETFH.
    pub fn getfh(self) -> Ops {
        self.op(A::OpGetfh)
    }

    /// GETATTR of the attributes in the bitmap4 `mask`.
    pub fn getattr(self, mask: &[u32]) -> Ops {
        self.op(A::OpGetattr(w::Getattr4args {
            attr_request: mask.to_vec(),
        }))
    }

    /// OPEN by name in the current directory: create (UNCHECKED4, mode 0644) or not.
    pub fn open(self, clientid: u64, owner: Bytes, name: &str, create: bool, write: bool) -> Ops {
        let access = if write {
            w::OPEN4_SHARE_ACCESS_BOTH
        } else {
            w::OPEN4_SHARE_ACCESS_READ
        };
        let openhow = if create {
            w::Openflag4::Open4Create(w::Createhow4::Unchecked4(fattr(
                &MODE_MASK,
                Bytes::from_static(&MODE_0644),
            )))
        } else {
            w::Openflag4::Default(w::Opentype4::Open4Nocreate)
        };
        self.op(A::OpOpen(w::Open4args {
            seqid: 0, // ignored in 4.1
            share_access: access | w::OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            share_deny: w::OPEN4_SHARE_DENY_NONE,
            owner: w::StateOwner4 { clientid, owner },
            openhow,
            claim: w::OpenClaim4::ClaimNull(component(name)),
        }))
    }

    /// CLOSE.
    pub fn close(self, sid: &Stateid) -> Ops {
        self.op(A::OpClose(w::Close4args {
            seqid: 0,
            open_stateid: sid.wire(),
        }))
    }

    /// READ (the last operation: its data ends the reply).
    pub fn read(mut self, sid: &Stateid, off: u64, count: u32) -> Ops {
        self.expect = Expect::DataLast(count);
        self.op(A::OpRead(w::Read4args {
            stateid: sid.wire(),
            offset: off,
            count,
        }))
    }

    /// READ_PLUS (4.2); no part of its reply is DDP-eligible (RFC 8267), so a large one
    /// comes back through a Reply chunk.
    pub fn read_plus(mut self, sid: &Stateid, off: u64, count: u32) -> Ops {
        self.expect = Expect::Large(count.saturating_add(REPLY_SLACK));
        self.op(A::OpReadPlus(w::ReadPlus4args {
            rpa_stateid: sid.wire(),
            rpa_offset: off,
            rpa_count: count,
        }))
    }

    /// WRITE; the data stays a separate buffer.
    pub fn write(self, sid: &Stateid, off: u64, stable: w::StableHow4, data: Bytes) -> Ops {
        self.op(A::OpWrite(w::Write4args {
            stateid: sid.wire(),
            offset: off,
            stable,
            data,
        }))
    }

    /// COMMIT of the whole file.
    pub fn commit(self) -> Ops {
        self.op(A::OpCommit(w::Commit4args {
            offset: 0,
            count: 0,
        }))
    }

    /// REMOVE.
    pub fn remove(self, name: &str) -> Ops {
        self.op(A::OpRemove(w::Remove4args {
            target: component(name),
        }))
    }

    /// CREATE of a directory (mode 0755).
    pub fn mkdir(self, name: &str) -> Ops {
        self.op(A::OpCreate(w::Create4args {
            objtype: w::Createtype4::Nf4dir,
            objname: component(name),
            createattrs: fattr(&MODE_MASK, Bytes::from_static(&MODE_0755)),
        }))
    }

    /// SETATTR of the size.
    pub fn set_size(self, sid: &Stateid, size: u64) -> Ops {
        let size: w::Fattr4Size = size;
        self.op(A::OpSetattr(w::Setattr4args {
            stateid: sid.wire(),
            obj_attributes: fattr(&SIZE_MASK, Bytes::copy_from_slice(&size.to_be_bytes())),
        }))
    }

    /// READDIR.
    pub fn readdir(mut self, cookie: u64, verf: [u8; 8], dircount: u32, maxcount: u32) -> Ops {
        self.expect = Expect::Large(maxcount.saturating_add(REPLY_SLACK));
        self.op(A::OpReaddir(w::Readdir4args {
            cookie,
            cookieverf: verf,
            dircount,
            maxcount,
            attr_request: READDIR_MASK.to_vec(),
        }))
    }

    /// LAYOUTGET of a flexible-files layout of the whole file (`write`: RW, else READ) with
    /// the open stateid `sid`.
    pub fn layoutget(self, sid: &Stateid, write: bool) -> Ops {
        self.op(A::OpLayoutget(w::Layoutget4args {
            loga_signal_layout_avail: false,
            loga_layout_type: w::Layouttype4::LAYOUT4_FLEX_FILES,
            loga_iomode: if write {
                w::Layoutiomode4::Layoutiomode4Rw
            } else {
                w::Layoutiomode4::Layoutiomode4Read
            },
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 0,
            loga_stateid: sid.wire(),
            loga_maxcount: LAYOUT_MAXCOUNT,
        }))
    }

    /// GETDEVICEINFO of a flexible-files device.
    pub fn getdeviceinfo(self, id: &w::Deviceid4) -> Ops {
        self.op(A::OpGetdeviceinfo(w::Getdeviceinfo4args {
            gdia_device_id: *id,
            gdia_layout_type: w::Layouttype4::LAYOUT4_FLEX_FILES,
            gdia_maxcount: LAYOUT_MAXCOUNT,
            gdia_notify_types: Vec::new(),
        }))
    }

    /// LAYOUTCOMMIT of the whole file after writes up to `end` (exclusive) through the
    /// layout `sid`.
    pub fn layoutcommit(self, sid: &Stateid, end: u64) -> Ops {
        self.op(A::OpLayoutcommit(w::Layoutcommit4args {
            loca_offset: 0,
            loca_length: u64::MAX,
            loca_reclaim: false,
            loca_stateid: sid.wire(),
            loca_last_write_offset: match end {
                0 => w::Newoffset4::False,
                n => w::Newoffset4::True(n - 1),
            },
            loca_time_modify: w::Newtime4::False,
            loca_layoutupdate: w::Layoutupdate4 {
                lou_type: w::Layouttype4::LAYOUT4_FLEX_FILES,
                lou_body: Bytes::new(),
            },
        }))
    }

    /// LAYOUTRETURN of the whole file's layout `sid` (no error or statistics reports).
    pub fn layoutreturn(self, sid: &Stateid) -> Ops {
        self.op(A::OpLayoutreturn(w::Layoutreturn4args {
            lora_reclaim: false,
            lora_layout_type: w::Layouttype4::LAYOUT4_FLEX_FILES,
            lora_iomode: w::Layoutiomode4::Layoutiomode4Any,
            lora_layoutreturn: w::Layoutreturn4::Layoutreturn4File(w::LayoutreturnFile4 {
                lrf_offset: 0,
                lrf_length: u64::MAX,
                lrf_stateid: sid.wire(),
                lrf_body: Bytes::new(),
            }),
        }))
    }

    /// RECLAIM_COMPLETE of all file systems.
    pub fn reclaim_complete(self) -> Ops {
        self.op(A::OpReclaimComplete(w::ReclaimComplete4args {
            rca_one_fs: false,
        }))
    }

    /// The COMPOUND of SEQUENCE `seq` and these operations, and the shape of its reply.
    pub(super) fn into_compound(
        self,
        minorversion: u32,
        seq: w::Sequence4args,
    ) -> (w::Compound4args, Expect) {
        let Ops { mut args, expect } = self;
        args[0] = A::OpSequence(seq);
        let c = w::Compound4args {
            tag: Bytes::new(),
            minorversion,
            argarray: args,
        };
        (c, expect)
    }
}
