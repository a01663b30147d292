"""Steps run as a local user of the guest, for the cases that check what users may do on a
mount (tests/vm/krb5.py, tests/vm/acl.py): a forked child that has become the user runs the
step and sends back its result or its error.
"""
import errno
import json
import os


class Failed(Exception):
    pass


def ename(e):
    return errno.errorcode.get(e, str(e))


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def try_errno(fn):
    """Runs fn; None when it worked, else the errno name."""
    try:
        fn()
        return None
    except OSError as e:
        return ename(e.errno)


def as_user(user, fn, *args, umask=None):
    """Runs fn(*args) in a child process that is `user` (name, uid, gid[, supplementary
    gids]), with `umask` when given; returns what fn returned (JSON-able), or raises Failed
    with the child's error."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(user[3] if len(user) > 3 else [])
            os.setgid(user[2])
            os.setuid(user[1])
            if umask is not None:
                os.umask(umask)
            out = {"ok": fn(*args)}
        except Failed as e:
            out = {"fail": str(e)}
        except OSError as e:
            out = {"fail": f"{e.strerror or ''} ({ename(e.errno)}) at {e.filename}"}
        except Exception as e:  # noqa: BLE001 - the cause goes to the parent
            out = {"fail": f"{type(e).__name__}: {e}"}
        with os.fdopen(w, "w") as f:
            json.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    os.waitpid(pid, 0)
    try:
        out = json.loads(data)
    except ValueError:
        raise Failed(f"as {user[0]}: the child died") from None
    if "fail" in out:
        raise Failed(f"as {user[0]}: {out['fail']}")
    return out["ok"]
