//! Changes to a directory between its attributes just before and just after, with no other
//! change made through this server in between: what NFSv4's `change_info4` calls atomic (RFC
//! 8881 section 3.3.6), and what NFSv3's wcc data means (RFC 1813 section 2.6). A client
//! whose cached change attribute (NFSv3: size and times) equals `before` then knows its
//! cached entries are still right apart from this change; without `atomic` the Linux
//! client drops its access and lookup caches of the directory at every create or remove in
//! it and asks again (an ACCESS and a LOOKUP more per file). knfsd holds the directory's
//! inode lock for the same span; here a lock per directory (striped) does it for every
//! change rnfsd makes, which is each NFS client's. A process on the server itself changing
//! the exported directory at the same moment is not held back.

use super::*;

/// Stripes of the directory locks: two directories share one with odds 1 in 1,024, and then
/// only take turns with each other.
pub(super) const DIR_TURNS: usize = 1024;

/// What a change to a directory returned, with the directory's attributes around it.
#[derive(Debug, Clone)]
pub struct DirChange<T> {
    /// The change's own result.
    pub value: T,
    /// The directory just before.
    pub before: Attr,
    /// The directory just after.
    pub after: Attr,
}

impl Vfs {
    /// Runs `f`, a change of names in `dir` (create, remove, link), between a stat of `dir`
    /// before and one after, while no other change through this server reaches `dir`.
    pub(super) fn change_dir<T>(
        &self,
        dir: &Node,
        f: impl FnOnce() -> VfsResult<T>,
    ) -> VfsResult<DirChange<T>> {
        let _turn = self.dir_turns[self.dir_turn(dir)].lock();
        let before = self.getattr(dir)?;
        let value = f()?;
        let after = self.getattr(dir)?;
        Ok(DirChange {
            value,
            before,
            after,
        })
    }

    /// [`Vfs::change_dir`] for a change of two directories at once (RENAME from `a` to `b`):
    /// both held, in stripe order; the result's attributes are `a`'s, the second `b`'s.
    pub(super) fn change_dirs<T>(
        &self,
        a: &Node,
        b: &Node,
        f: impl FnOnce() -> VfsResult<T>,
    ) -> VfsResult<(DirChange<T>, DirChange<()>)> {
        let (ia, ib) = (self.dir_turn(a), self.dir_turn(b));
        let _first = self.dir_turns[ia.min(ib)].lock();
        let _second = (ia != ib).then(|| self.dir_turns[ia.max(ib)].lock());
        let (a0, b0) = (self.getattr(a)?, self.getattr(b)?);
        let value = f()?;
        let (a1, b1) = (self.getattr(a)?, self.getattr(b)?);
        Ok((
            DirChange {
                value,
                before: a0,
                after: a1,
            },
            DirChange {
                value: (),
                before: b0,
                after: b1,
            },
        ))
    }

    fn dir_turn(&self, dir: &Node) -> usize {
        io::write_turn(&dir.attr, self.dir_turns.len())
    }
}

impl<T> DirChange<T> {
    /// The same change with its value turned by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> DirChange<U> {
        DirChange {
            value: f(self.value),
            before: self.before,
            after: self.after,
        }
    }

    /// [`DirChange::map`] with a step that may fail.
    pub fn try_map<U>(self, f: impl FnOnce(T) -> VfsResult<U>) -> VfsResult<DirChange<U>> {
        Ok(DirChange {
            value: f(self.value)?,
            before: self.before,
            after: self.after,
        })
    }
}
