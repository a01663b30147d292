//! Permission checks made against an object's mode before I/O through cached descriptors (the
//! kernel checks the rest, as the caller); a file with an access ACL is checked by it instead
//! (`acl`).

use super::*;

/// Whether `c` may do `want` (a mask of r=4, w=2, x=1) on an object with attributes `a`.
pub(super) fn mode_allows(c: &Creds, a: &Attr, want: u32, owner_override: bool) -> bool {
    if c.uid == 0 {
        // Root may execute only what someone may execute.
        return want & 1 == 0 || a.ftype == FileType::Directory || a.mode & 0o111 != 0;
    }
    if owner_override && c.uid == a.uid {
        return true;
    }
    let bits = if c.uid == a.uid {
        (a.mode >> 6) & 7
    } else if c.in_group(a.gid) {
        (a.mode >> 3) & 7
    } else {
        a.mode & 7
    };
    bits & want == want
}

impl Vfs {
    /// ACCESS: which of the `mask` bits the caller holds on `node`.
    pub fn access(&self, caller: &Caller, node: &Node, mask: u32) -> u32 {
        let a = &node.attr;
        let mut granted = 0;
        let r = self.may(caller, node, 4, false);
        let w = self.may(caller, node, 2, false) && caller.writable;
        let x = self.may(caller, node, 1, false);
        if a.ftype == FileType::Directory {
            if r {
                granted |= access::READ;
            }
            if x {
                granted |= access::LOOKUP;
            }
            if w {
                granted |= access::MODIFY | access::EXTEND | access::DELETE;
            }
        } else {
            if r {
                granted |= access::READ;
            }
            if w {
                granted |= access::MODIFY | access::EXTEND;
            }
            if x {
                granted |= access::EXECUTE;
            }
        }
        granted & mask
    }
}
