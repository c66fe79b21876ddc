"""Filesystems: which journal the checkpoint may use where its state dir lives.

SQLite's WAL mode keeps an index in shared memory beside the database, which "does not work over a
network filesystem" (sqlite.org/wal.html): two hosts (or one host and a stale client cache) may each
see their own index and corrupt the database. Cluster home and scratch directories are NFS, Lustre,
GPFS, BeeGFS, CIFS and the like. So the checkpoint's journal is chosen from the state dir's filesystem
type: WAL on a local filesystem (fast: a harvest commits in groups without a journal copy), the
rollback journal (`DELETE`) on a network one, where SQLite's own locks and our exclusive state-dir lock
(one run per state dir) keep a single writer, and every commit still reaches the server before it
counts (`synchronous=FULL`).

Both decisions here are pure: `fs_type_of(path, mountinfo)` reads the type from the text of
`/proc/self/mountinfo` (the shell reads the file), and `checkpoint_mode(fs_type)` names the journal.
"""

from __future__ import annotations

from judgecore.values import frozen

#: filesystem types (as Linux names them in mountinfo) that are shared over a network
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "gpfs",
        "beegfs",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "fuse.ceph",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "9p",
        "afs",
        "ocfs2",
        "gfs2",
        "panfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.rclone",
        "fuse.juicefs",
        "wekafs",
        "quobyte",
        "fuse.quobyte",
        "davfs",
        "fuse.davfs",
        "orangefs",
        "pvfs2",
    }
)


@frozen
class CheckpointMode:
    """The checkpoint's SQLite journal for a filesystem, and a one-line reason."""

    fs_type: str
    journal_mode: str  # "wal" or "delete"
    network: bool
    reason: str


def checkpoint_mode(fs_type: str | None) -> CheckpointMode:
    """WAL on a local (or unknown) filesystem; the rollback journal on a network one."""
    kind = (fs_type or "unknown").lower()
    if kind in NETWORK_FILESYSTEMS or kind.startswith("nfs"):
        return CheckpointMode(
            kind,
            "delete",
            True,
            f"the state dir is on {kind}, a network filesystem, where SQLite's WAL mode does not work: "
            "the checkpoint uses the rollback journal and one run at a time",
        )
    return CheckpointMode(kind, "wal", False, f"the state dir is on {kind}: the checkpoint uses WAL")


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (`\\040`)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and len(field[i + 1 : i + 4]) == 3:
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def fs_type_of(path: str, mountinfo: str) -> str | None:
    """The filesystem type of the mount holding absolute `path` (resolved by the caller), from the text
    of `/proc/self/mountinfo`: the mount whose mount point is the longest prefix of `path` (the last one
    listed wins a tie: a later mount over the same point hides the earlier). None if nothing matches."""
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        rest = right.split()
        if not rest:
            continue
        inside = path == point or point == "/" or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), rest[0])
    return best[1] if best else None
