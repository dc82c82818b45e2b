"""Size-capped tmpfs quotas: a write past the size fails, and every mount under a folder can be detached."""

import os
import subprocess

import pytest

from mintgym.environments.isolation import mounts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


def test_a_write_past_the_quota_fails_and_unmount_all_detaches(tmp_path):
    quota = tmp_path / "quota"
    quota.mkdir()
    mounts.mount_tmpfs(quota, 4, None, family="test", mode=0o755, noexec=False)
    try:
        (quota / "inner").mkdir()
        mounts.mount_tmpfs(quota / "inner", 1, None, family="test")
        assert mounts.mounts_under(quota) == [quota / "inner", quota]
        result = subprocess.run(["dd", "if=/dev/zero", f"of={quota}/big", "bs=1M", "count=8"], capture_output=True,
                                text=True, check=False)
        assert "No space left on device" in result.stderr
        assert (quota / "big").stat().st_size <= 4 * 2**20
    finally:
        mounts.unmount_all(quota)
    assert mounts.mounts_under(quota) == []
    mounts.unmount(quota)  # nothing mounted: no error


def test_a_mount_failure_names_the_folder(tmp_path):
    with pytest.raises(OSError, match="missing"):
        mounts.mount_tmpfs(tmp_path / "missing", 1, None, family="test")
