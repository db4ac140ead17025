"""Named files handed between machines (a shard's observations): write one to a folder,
a file or a bucket prefix; read every one of a kind back from any of them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolpin.errors import InputError
from toolpin.storage.url import is_bucket_url, parse_bucket_url
from toolpin.util.fs import atomic_write, read_input


def write_named(dest: str, name: str, data: bytes, *, suffix: str) -> str:
    """Write ``data`` as ``name`` in ``dest`` (a folder or ``s3://`` prefix), or as the
    file ``dest`` itself when it ends in ``suffix``; returns where it went."""
    if is_bucket_url(dest):
        from toolpin.storage.s3 import Bucket

        location = parse_bucket_url(dest)
        Bucket(location).put(name, data, cache_control="no-cache")
        return location.url + name
    path = Path(dest)
    if not dest.endswith(suffix):
        path.mkdir(parents=True, exist_ok=True)
        path = path / name
    elif not path.parent.is_dir():
        raise InputError(f"the folder of {dest} does not exist")
    atomic_write(path, data)
    return str(path)


def read_named(sources: Sequence[str], *, suffix: str, cap: int) -> list[tuple[str, bytes]]:
    """Every file ending in ``suffix`` of each source (a file, a folder, an ``s3://``
    prefix), sorted by name within a source; a source with none is refused."""
    out: list[tuple[str, bytes]] = []
    for source in sources:
        found: list[tuple[str, bytes]] = []
        if is_bucket_url(source):
            from toolpin.storage.s3 import Bucket

            bucket = Bucket(parse_bucket_url(source))
            for rel in sorted(r for r in bucket.list() if r.endswith(suffix) and "/" not in r):
                data = bucket.get(rel, cap)
                if data is not None:
                    found.append((bucket.url + rel, data))
        elif Path(source).is_dir():
            found.extend(
                (str(path), read_input(str(path), what=str(path), cap=cap))
                for path in sorted(Path(source).glob(f"*{suffix}"))
            )
        else:
            found.append((source, read_input(source, what=source, cap=cap)))
        if not found:
            raise InputError(f"{source} holds no *{suffix} file")
        out.extend(found)
    return out


__all__ = ["read_named", "write_named"]
