"""Small file-system primitives the storage layer shares: durable renames, directory fsync, names."""
from __future__ import annotations

import os
from pathlib import Path

OFFSET_WIDTH = 20
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


def offset_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log``: Kafka's 20-digit zero-padded base offset."""
    return f"{base_offset:0{OFFSET_WIDTH}d}{suffix}"


def base_offset_of(name: str) -> int:
    stem = name.split(".", 1)[0]
    if len(stem) != OFFSET_WIDTH or not stem.isdigit():
        raise ValueError(f"not a segment file name: {name!r}")
    return int(stem)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_filesystem(path: Path) -> None:
    """Make everything written to the filesystem holding ``path`` durable in one call (Linux ``syncfs``; else
    ``sync``): a clean shutdown of thousands of logs writes their snapshots and checkpoints unsynced, then this
    once, instead of two fsyncs per log."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _SYNCFS is None or _SYNCFS(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _syncfs():
    """libc's ``syncfs``, None where there is none (then ``os.sync``)."""
    try:
        import ctypes
        import ctypes.util
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True), "syncfs", None)
    except OSError:
        return None


_SYNCFS = _syncfs()


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file, never a mix.

    Write ``<path>.tmp``, fsync it, rename over ``path``, fsync the directory (Kafka's checkpoint
    discipline). ``durable=False`` skips both fsyncs: the rename still leaves the old or the new file after a
    process crash, but a machine crash may keep the old one (for state that recovery can rebuild).
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def durable_rename(src: Path, dst: Path) -> None:
    os.replace(src, dst)
    fsync_dir(dst.parent)


def delete_if_exists(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False
