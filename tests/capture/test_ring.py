"""The ring: files handed to the dissector in write order, only once complete, even after the ring deleted them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kafkatap.capture.ring import DirectoryWatch, Ring


def consume(ring: Ring) -> tuple[threading.Thread, list[str]]:
    got: list[str] = []
    t = threading.Thread(target=lambda: got.extend(ring.closed_paths()), daemon=True)
    t.start()
    return t, got


def test_closed_files_in_order_and_only_when_complete(tmp_path: Path) -> None:
    ring = Ring()
    names = [str(tmp_path / f"kafkatap_0000{i}.pcapng") for i in (1, 2, 3)]
    for n in names:
        Path(n).write_bytes(b"x" * 10)
    t, got = consume(ring)
    ring.opened(names[0])
    ring.opened(names[1])
    assert ring.current == names[1]
    ring.closed(names[0])
    t.join(0.2)
    assert got == [names[0]] and t.is_alive()  # names[1] is still being written
    ring.closed(names[2])  # a close also completes every earlier file
    ring.finish()
    t.join(5)
    assert got == names and not t.is_alive()
    assert ring.bytes_written() == 30


def test_held_files_survive_the_ring(tmp_path: Path) -> None:
    ring = Ring(str(tmp_path / ".kafkatap-held"))
    first = tmp_path / "kafkatap_00001.pcapng"
    first.write_bytes(b"first")
    ring.opened(str(first))
    ring.closed(str(first))
    first.unlink()  # the engine's ring deleted it
    ring.finish()
    paths, contents = [], []
    for path in ring.closed_paths():
        paths.append(path)
        contents.append(Path(path).read_bytes())
    assert len(paths) == 1 and Path(paths[0]).name == first.name and contents == [b"first"]
    assert not Path(paths[0]).exists()  # let go once the consumer asked for the next file: no disk kept
    assert ring.rotated_away() == [str(first)] and ring.unreadable() == []
    ring.release()
    assert not (tmp_path / ".kafkatap-held").exists()


def test_directory_watch_follows_tcpdump_names_and_keeps_k(tmp_path: Path) -> None:
    ring = Ring(keep=2)
    watch = DirectoryWatch(str(tmp_path / "kafkatap.pcap"), ring)
    names = ["kafkatap.pcap", "kafkatap.pcap1", "kafkatap.pcap2", "kafkatap.pcap3", "kafkatap.pcap10"]
    for name in names[:2]:
        (tmp_path / name).write_bytes(b"p")
        watch.poll()
    for name in names[2:]:  # three files between two polls: none may be missed
        (tmp_path / name).write_bytes(b"p")
    (tmp_path / "kafkatap.pcapng-other").write_bytes(b"not ours")
    watch.poll()
    assert [os.path.basename(f.path) for f in ring.files] == names[:4] + ["kafkatap.pcap10"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kafkatap.pcap10", "kafkatap.pcap3", "kafkatap.pcapng-other"]
    assert ring.current == str(tmp_path / "kafkatap.pcap10")
