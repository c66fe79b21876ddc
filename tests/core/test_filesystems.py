"""Where the checkpoint lives decides its journal: WAL locally, the rollback journal on a network fs."""

from __future__ import annotations

import pytest

from judgecore.decide.filesystems import checkpoint_mode, fs_type_of

MOUNTINFO = r"""22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:21 / /proc rw,nosuid - proc proc rw
40 22 0:35 / /home rw,relatime shared:20 - nfs4 filer:/export/home rw,vers=4.2
41 40 0:36 / /home/alice/scratch rw - lustre 10.0.0.1@tcp:/scratch rw
42 22 0:37 / /mnt/my\040data rw - cifs //nas/data rw
43 22 0:38 / /tmp rw - tmpfs tmpfs rw
44 22 0:39 / /tmp rw - nfs filer:/tmp rw
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", "ext4"),
        ("/var/lib/x", "ext4"),
        ("/home", "nfs4"),
        ("/home/alice/state", "nfs4"),
        ("/home/alice/scratch/run1", "lustre"),
        ("/home/alice/scratchy", "nfs4"),  # a prefix of the name is not a parent directory
        ("/mnt/my data/state", "cifs"),  # mountinfo writes a space as \040
        ("/tmp/s", "nfs"),  # a later mount over the same point hides the earlier one
    ],
)
def test_the_filesystem_of_a_path_is_its_longest_mount_point(path, expected):
    assert expected == fs_type_of(path, MOUNTINFO)


def test_no_mount_table_gives_no_type():
    assert fs_type_of("/x", "") is None
    assert fs_type_of("/x", "garbage line without separator\n") is None


# the cluster filesystems the contract names, as Linux's mount table spells them (and a future nfs)
@pytest.mark.parametrize("fs", ["nfs", "nfs4", "NFS4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "nfs5"])
def test_a_network_filesystem_gets_the_rollback_journal(fs):
    mode = checkpoint_mode(fs)
    assert ("delete", True) == (mode.journal_mode, mode.network)
    assert "network filesystem" in mode.reason


@pytest.mark.parametrize("fs", ["ext4", "xfs", "btrfs", "zfs", "tmpfs", "overlay", "apfs", None])
def test_a_local_or_unknown_filesystem_keeps_wal(fs):
    mode = checkpoint_mode(fs)
    assert ("wal", False) == (mode.journal_mode, mode.network)
