"""``ZkafkaCluster``'s disk faults on the small log dir of ``small_log_dir=b``: filled, made unwritable, restored
— acted on through the sidecar that holds the tmpfs volume, whatever the broker's state
(``zkafka.testing.disk``'s scripts)."""
from __future__ import annotations

from zkafka.testing import disk


class SmallLogDirFaults:
    """Mixed into ``ZkafkaCluster``: uses its ``disk_holder``, ``small_log_dir`` and ``wrapped``."""

    def _holder(self):
        if self.disk_holder is None:
            raise RuntimeError("this cluster has no small log dir (ZkafkaCluster(small_log_dir=b))")
        return self.disk_holder.get_wrapped_container()

    def _holder_exec(self, script: str) -> str:
        code, output = self._holder().exec_run(["sh", "-c", script], user="root")
        text = output.decode(errors="replace")
        if code != 0:
            raise RuntimeError(f"disk holder: `{script}` exited {code}: {text.strip()}")
        return text

    def fill_small_dir(self) -> str:
        """Fill the small log dir's file system; returns ``df``'s use% of it."""
        self._holder_exec(disk.fill_script())
        return self.small_dir_usage()

    def small_dir_usage(self) -> str:
        return self._holder_exec(disk.usage_script()).strip()

    def small_dir_faulty(self) -> bool:
        """A filler is in the small log dir or its permissions are taken away."""
        code, _ = self._holder().exec_run(["sh", "-c", disk.faulty_script()], user="root")
        return code == 0

    def make_small_dir_unwritable(self) -> None:
        self._holder_exec(disk.unwritable_script())

    def small_dir_writable_by_broker(self) -> bool:
        """Whether the broker's user can create a file in the small log dir (its container must run)."""
        code, _ = self.wrapped(self.small_log_dir).exec_run(["sh", "-c", disk.probe_write_script()],
                                                            user=str(disk.RUN_AS_UID))
        return code == 0

    def restore_small_dir(self) -> None:
        """Remove the filler and give the directory back to the broker's user (the broker still needs a
        restart to bring an offline log dir back)."""
        self._holder_exec(f"{disk.unfill_script()} && {disk.writable_script()}")
