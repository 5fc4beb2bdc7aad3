"""Disk faults on a broker's small log dir, as shell scripts run with ``docker exec`` as root.

The small log dir (``SMALL_LOG_DIR``) is a tmpfs of ``SMALL_LOG_DIR_MIB`` MiB held by a Docker volume that a
sidecar container keeps mounted, so its contents survive the broker container's restarts (a restart must
not wipe replicas: that would be a loss the harness made, not the system under test). The broker that
owns it runs as ``RUN_AS_UID`` (not root), so taking the directory's permissions away stops it for real.

- full: a filler file takes every free byte (written until ENOSPC); healing removes it.
- unwritable: ``chmod 000`` on the directory; healing gives the owner its rights back.
"""
from __future__ import annotations

from zkafka.testing.defaults import SMALL_LOG_DIR

RUN_AS_UID = 65534  # nobody, in both images
HOLDER_MOUNT = "/held"  # where the sidecar mounts the volume: the faults act there, whatever the broker's state
FILLER = ".nemesis-filler"

# The broker container's command when it owns the small dir: as root, give the config dir and the log
# dirs to the unprivileged user, then run the image's entrypoint as that user (setpriv execs it: the
# broker stays PID 1 and gets docker's SIGTERM).
RUN_AS_SCRIPT = (f"chown -R {RUN_AS_UID}:{RUN_AS_UID} /etc/zkafka /var/lib/zkafka && "
                 f"exec setpriv --reuid={RUN_AS_UID} --regid={RUN_AS_UID} --clear-groups "
                 f"/usr/local/bin/zkafka-entrypoint")


def fill_script(directory: str = HOLDER_MOUNT) -> str:
    """Write the filler until the file system is full: 1 MiB blocks, then 4 KiB ones for the rest."""
    filler = f"{directory}/{FILLER}"
    return (f"dd if=/dev/zero of={filler} bs=1M 2>/dev/null; dd if=/dev/zero of={filler}.tail bs=4k 2>/dev/null; "
            f"test -f {filler}")


def unfill_script(directory: str = HOLDER_MOUNT) -> str:
    return f"rm -f {directory}/{FILLER} {directory}/{FILLER}.tail"


def unwritable_script(directory: str = HOLDER_MOUNT) -> str:
    return f"chmod 000 {directory}"


def writable_script(directory: str = HOLDER_MOUNT) -> str:
    return f"chmod 755 {directory} && chown {RUN_AS_UID}:{RUN_AS_UID} {directory}"


def usage_script(directory: str = HOLDER_MOUNT) -> str:
    """``df``'s use% of the directory's file system, e.g. ``100%``."""
    return f"df --output=pcent {directory} | tail -n 1"


def faulty_script(directory: str = HOLDER_MOUNT) -> str:
    """Succeeds when a filler is there or the directory lost its mode."""
    return f'test -e {directory}/{FILLER} || test "$(stat -c %a {directory})" != 755'


def probe_write_script(directory: str = SMALL_LOG_DIR) -> str:
    """Succeeds when the current user can create a file in the directory."""
    return f"touch {directory}/.nemesis-probe && rm -f {directory}/.nemesis-probe"
