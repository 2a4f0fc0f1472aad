"""One TLS connection decrypted from its two TCP byte streams and a key log.

Each direction is framed into records and read in order. Records in the clear carry the handshake this needs (the
ClientHello's random finds the secrets, the ServerHello names the version and suite); after that a direction is opened
with its own keys: TLS 1.3 under the handshake traffic secret until its Finished, then under the application traffic
secret (moved on by KeyUpdate); TLS 1.2 from its ChangeCipherSpec on, with keys from the master secret.

The two directions arrive independently, so one may need what the other has not delivered yet (the client's encrypted
records need the ServerHello's suite, the server's need the ClientHello's random): such records wait, up to max_held
bytes, and are opened, or booked with the other direction's reason, as soon as it is known.

AEAD records are numbered, so after a capture gap, a header that is not TLS, or keys this cannot get, a direction stops
for good and books every later byte with the reason (account.py). A record failing authentication is booked as
bad_record and skipped: the next ones still open, since a damaged record does not move the sequence.

Record bytes not opened after a direction has handed out plaintext leave a hole in that plaintext. The output says
where, as (direction, the hole's wire size) between the plaintext chunks, so a reader framing the plaintext (Kafka's
4-byte sizes) drops the message the hole cut instead of reading across it, as after a capture gap.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag

from kafkatap.dissect.tls.account import (
    BAD_RECORD, DECRYPTED, EARLY_DATA, LOST_SEGMENT, NO_HANDSHAKE, NO_KEY, REASONS, RENEGOTIATION, TLS_OVERHEAD,
    TRUNCATED, UNSUPPORTED_SUITE, TlsStats,
)
from kafkatap.dissect.tls.alerts import Alert, parse_alerts
from kafkatap.dissect.tls.handshake import (
    CLIENT_HELLO, FINISHED, KEY_UPDATE, SERVER_HELLO, ClientHello, HandshakeReader, Malformed, ServerHello,
    parse_client_hello, parse_server_hello,
)
from kafkatap.dissect.tls.keylog import (
    CLIENT_HANDSHAKE_TRAFFIC_SECRET, CLIENT_RANDOM, CLIENT_TRAFFIC_SECRET_0, SERVER_HANDSHAKE_TRAFFIC_SECRET,
    SERVER_TRAFFIC_SECRET_0, KeyLog,
)
from kafkatap.dissect.tls.keyschedule import key_block
from kafkatap.dissect.tls.protection import Tls12Decrypter, Tls13Decrypter
from kafkatap.dissect.tls.records import (
    ALERT, APPLICATION_DATA, CHANGE_CIPHER_SPEC, HANDSHAKE, HEARTBEAT, Record, RecordBuffer,
)
from kafkatap.dissect.tls.suites import SUITES, TLS12, TLS13, suite_name, version_name

CLIENT, SERVER = 0, 1
MAX_HELD = 64 << 20  # bytes a direction holds while waiting for the other direction's hello
MAX_ALERTS = 64  # alerts kept per connection (a real one sends one or two)
PLAINTEXT, HANDSHAKE_KEYS, TRAFFIC_KEYS = 0, 1, 2  # a direction's epochs (TLS 1.2 goes from PLAINTEXT to TRAFFIC_KEYS)
TLS13_LABELS = ((CLIENT_HANDSHAKE_TRAFFIC_SECRET, SERVER_HANDSHAKE_TRAFFIC_SECRET),  # [application][direction]
                (CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0))
Output = list[tuple[int, bytes | int]]  # (direction, plaintext), or (direction, wire bytes of a hole in it)


class _Direction:
    """One direction's reading state."""

    __slots__ = ("records", "handshake", "stats", "epoch", "decrypter", "hello", "authenticated", "reason")

    def __init__(self) -> None:
        self.records = RecordBuffer()
        self.handshake = HandshakeReader()
        self.stats = TlsStats()
        self.epoch = PLAINTEXT
        self.decrypter: Tls13Decrypter | Tls12Decrypter | None = None
        self.hello = False  # its first handshake message (ClientHello, or ServerHello / HelloRetryRequest) was read
        self.authenticated = 0  # records opened under the current keys
        self.reason: str | None = None  # set once the direction stopped: every later byte is booked with it


class TlsSession:
    """The decrypter of one TLS connection: direction 0 is client -> server, 1 is server -> client."""

    __slots__ = ("_keylog", "_sides", "_max_held", "_key_block", "client_hello", "server_hello", "alerts")

    def __init__(self, keylog: KeyLog, *, max_held: int = MAX_HELD) -> None:
        self._keylog = keylog
        self._sides = (_Direction(), _Direction())
        self._max_held = max_held
        self._key_block: tuple[tuple[bytes, bytes], tuple[bytes, bytes]] | None = None
        self.client_hello: ClientHello | None = None
        self.server_hello: ServerHello | None = None  # a HelloRetryRequest until the real ServerHello comes
        self.alerts: list[Alert] = []  # the first MAX_ALERTS, in the order read

    # -- what the connection negotiated

    @property
    def version(self) -> int | None:
        return self.server_hello.version if self.server_hello else None

    @property
    def version_name(self) -> str | None:
        return version_name(self.server_hello.version) if self.server_hello else None

    @property
    def cipher_suite(self) -> int | None:
        return self.server_hello.cipher_suite if self.server_hello else None

    @property
    def suite_name(self) -> str | None:
        return suite_name(self.server_hello.cipher_suite) if self.server_hello else None

    @property
    def stats(self) -> tuple[TlsStats, TlsStats]:
        return self._sides[CLIENT].stats, self._sides[SERVER].stats

    def __repr__(self) -> str:
        client, server = self.stats
        return (f"TlsSession({self.version_name or 'no ServerHello'}, {self.suite_name or 'no suite'}, "
                f"decrypted={client.decrypted}+{server.decrypted}, stopped={client.stopped!r}/{server.stopped!r})")

    # -- input

    def feed(self, direction: int, data: bytes | bytearray | memoryview) -> Output:
        """Take the next bytes of one direction; return the application data now readable, as (direction, plaintext)
        chunks in order per direction. Mostly the direction fed; the other one's too when its records waited for the
        hello these bytes carried. A (direction, int) item is a hole in that direction's plaintext: that many wire
        bytes of records not opened, after plaintext was handed out."""
        side = self._sides[direction]
        side.stats.seen += len(data)
        plaintext: Output = []
        if side.reason is not None:
            side.stats.book(side.reason, len(data))
            return plaintext
        side.records.extend(data)
        while self._advance(direction, plaintext) | self._advance(1 - direction, plaintext):
            pass
        return plaintext

    def gap(self, direction: int, nbytes: int) -> None:
        """The capture lost nbytes of this direction: its record boundaries and sequence numbers are gone, so it
        stops here (its partial record and every later byte are lost_segment)."""
        side = self._sides[direction]
        side.stats.lost_in_gaps += nbytes
        self._stop(direction, LOST_SEGMENT, f"the capture lost {nbytes} bytes")
        self._advance(direction, [])
        self._advance(1 - direction, [])  # the other one may have been waiting for this one's hello

    def close(self) -> None:
        """The connection ended: what is still buffered is a record cut short (truncated), or records that waited
        for a hello the other direction never sent (no_handshake)."""
        for direction, side in enumerate(self._sides):
            if side.reason is None and side.records.pending:
                if side.records.peek() is None:
                    self._stop(direction, TRUNCATED, f"the connection ended {side.records.pending} bytes into a record")
                else:
                    self._stop(direction, NO_HANDSHAKE, "the connection ended before the other direction's hello")
                self._advance(direction, [])

    # -- reading one direction

    def _advance(self, direction: int, plaintext: Output) -> bool:
        """Open this direction's whole records as far as possible; True if any was."""
        side = self._sides[direction]
        moved = False
        while side.reason is None:
            record = side.records.peek()
            if record is None:
                if side.records.error is not None:
                    self._stop(direction, BAD_RECORD, side.records.error)
                break
            category = self._open(direction, record, plaintext)
            if category is None:
                if side.records.pending > self._max_held:
                    self._stop(direction, NO_HANDSHAKE, f"more than {self._max_held} bytes waited for a hello")
                break
            side.records.pop(record)
            side.stats.book(category, record.size)
            if category in REASONS:
                self._hole(direction, record.size, plaintext)
            moved = True
        if side.reason is not None:
            dropped = side.records.drain()
            side.stats.book(side.reason, dropped)
            self._hole(direction, dropped, plaintext)
        side.stats.pending = side.records.pending
        return moved

    def _hole(self, direction: int, nbytes: int, plaintext: Output) -> None:
        """Mark record bytes not opened, when they cut the plaintext this direction has handed out."""
        if nbytes and self._sides[direction].stats.plaintext:
            plaintext.append((direction, nbytes))

    def _stop(self, direction: int, reason: str, detail: str) -> str:
        side = self._sides[direction]
        if side.reason is None:
            side.reason = reason
            side.stats.stopped = f"{reason}: {detail}"
        return side.reason

    def _wait(self, direction: int, hello: str) -> str | None:
        """None: wait for the other direction's hello. Once that direction has stopped, it never comes: stop too."""
        reason = self._sides[1 - direction].reason
        return None if reason is None else self._stop(direction, reason, f"the other direction stopped before {hello}")

    def _open(self, direction: int, record: Record, plaintext: Output) -> str | None:
        """Read one record; return the category its bytes are booked under, or None if it must wait."""
        side = self._sides[direction]
        if side.epoch == PLAINTEXT:
            return self._open_plaintext(direction, record, plaintext)
        if self.version == TLS13:
            return self._open_tls13(direction, record, plaintext)
        return self._open_tls12(direction, record, plaintext)

    def _open_plaintext(self, direction: int, record: Record, plaintext: Output) -> str | None:
        side = self._sides[direction]
        content_type = record.content_type
        if content_type == ALERT:  # in the clear: a handshake refused, or a peer failing before encryption
            self._alert(direction, record.fragment, encrypted=False)
            return TLS_OVERHEAD
        if not side.hello:
            if content_type != HANDSHAKE:
                return self._stop(direction, NO_HANDSHAKE, "the first record is not a hello: the capture began "
                                                           "mid-connection")
            return self._handshake(direction, record.fragment)
        if self.server_hello is None:  # the client's next records depend on the version the server picks
            return self._wait(direction, "the ServerHello")
        tls13 = self.server_hello.version == TLS13
        if content_type == HANDSHAKE:
            return self._handshake(direction, record.fragment)
        if content_type == CHANGE_CIPHER_SPEC:
            return TLS_OVERHEAD if tls13 else self._start_tls12(direction)  # TLS 1.3: middlebox compatibility only
        if content_type == APPLICATION_DATA and tls13:
            return self._start_tls13(direction, record, plaintext)
        if content_type == HEARTBEAT and not tls13:
            return TLS_OVERHEAD
        return BAD_RECORD

    def _handshake(self, direction: int, content: bytes) -> str:
        """Read handshake content (in the clear or decrypted): the hellos, TLS 1.3's Finished and KeyUpdate."""
        side = self._sides[direction]
        try:
            for msg_type, body in side.handshake.feed(content):
                if side.reason is not None:
                    break
                self._message(direction, msg_type, body)
        except Malformed as error:
            return self._stop(direction, BAD_RECORD, f"handshake message: {error}")
        return TLS_OVERHEAD

    def _message(self, direction: int, msg_type: int, body: bytes | None) -> None:
        side = self._sides[direction]
        if not side.hello:
            if msg_type != (CLIENT_HELLO if direction == CLIENT else SERVER_HELLO):
                self._stop(direction, NO_HANDSHAKE, f"the first handshake message (type {msg_type}) is not a hello: "
                                                    "the capture began mid-handshake")
                return
            side.hello = True
        if body is not None and msg_type == CLIENT_HELLO and direction == CLIENT and self.client_hello is None:
            self.client_hello = parse_client_hello(body)  # a second one (after a HelloRetryRequest) has the same random
        elif body is not None and msg_type == SERVER_HELLO and direction == SERVER and (
                self.server_hello is None or self.server_hello.retry):
            self.server_hello = parse_server_hello(body)  # later ones (TLS 1.2 renegotiation) are not followed
        elif msg_type == FINISHED and side.epoch == HANDSHAKE_KEYS:
            side.epoch = TRAFFIC_KEYS
            decrypter = self._tls13_decrypter(direction, application=True)
            if isinstance(decrypter, Tls13Decrypter):
                side.decrypter, side.authenticated = decrypter, 0
        elif msg_type == KEY_UPDATE and side.epoch == TRAFFIC_KEYS and isinstance(side.decrypter, Tls13Decrypter):
            side.decrypter.update()

    def _alert(self, direction: int, content: bytes, encrypted: bool) -> None:
        if len(self.alerts) < MAX_ALERTS:
            self.alerts.extend(parse_alerts(direction, content, encrypted)[:MAX_ALERTS - len(self.alerts)])

    def _secret(self, label: str) -> bytes | None:
        assert self.client_hello is not None
        return self._keylog.secret(self.client_hello.random, label)

    # -- TLS 1.3

    def _tls13_decrypter(self, direction: int, application: bool) -> Tls13Decrypter | str | None:
        """The decrypter under this direction's handshake or first application traffic secret; else the reason it
        stopped, or None to wait for the ClientHello."""
        if self.client_hello is None:
            return self._wait(direction, "the ClientHello")
        assert self.server_hello is not None
        code = self.server_hello.cipher_suite
        suite = SUITES.get(code)
        if suite is None or suite.version != TLS13:
            return self._stop(direction, UNSUPPORTED_SUITE, f"TLS 1.3 with {suite_name(code)}")
        label = TLS13_LABELS[application][direction]
        secret = self._secret(label)
        if secret is None or len(secret) != suite.hash.digest_size:
            return self._stop(direction, NO_KEY, f"the key log has no {label} of {suite.hash.name} for this connection")
        return Tls13Decrypter(suite, secret)

    def _start_tls13(self, direction: int, record: Record, plaintext: Output) -> str | None:
        """This direction's first encrypted record: under its handshake traffic secret, or 0-RTT data."""
        side = self._sides[direction]
        if side.decrypter is None:
            decrypter = self._tls13_decrypter(direction, application=False)
            if not isinstance(decrypter, Tls13Decrypter):
                return decrypter
            side.decrypter = decrypter
        side.epoch = HANDSHAKE_KEYS
        category = self._open_tls13(direction, record, plaintext)
        if category == EARLY_DATA:
            side.epoch = PLAINTEXT  # after a HelloRetryRequest, the second ClientHello follows in the clear
        return category

    def _open_tls13(self, direction: int, record: Record, plaintext: Output) -> str:
        side = self._sides[direction]
        decrypter = side.decrypter
        assert isinstance(decrypter, Tls13Decrypter)
        if record.content_type == CHANGE_CIPHER_SPEC:  # middlebox compatibility: may follow 0-RTT records
            return TLS_OVERHEAD
        if record.content_type == ALERT:  # in the clear, from a peer that failed the handshake
            self._alert(direction, record.fragment, encrypted=False)
            return TLS_OVERHEAD
        if record.content_type != APPLICATION_DATA:
            return BAD_RECORD
        try:
            inner_type, content = decrypter.open(record)
        except InvalidTag:
            if (direction == CLIENT and side.epoch == HANDSHAKE_KEYS and not side.authenticated
                    and self.client_hello is not None and self.client_hello.early_data):
                return EARLY_DATA  # under the early traffic secret: 0-RTT data and EndOfEarlyData
            decrypter.skip()
            return BAD_RECORD
        side.authenticated += 1
        if inner_type == APPLICATION_DATA:
            return self._deliver(direction, content, plaintext)
        if inner_type == HANDSHAKE:
            return self._handshake(direction, content)
        if inner_type == ALERT:
            self._alert(direction, content, encrypted=True)
            return TLS_OVERHEAD
        return BAD_RECORD

    # -- TLS 1.2

    def _start_tls12(self, direction: int) -> str | None:
        """This direction's ChangeCipherSpec: the records after it are under the key block's keys."""
        if self.client_hello is None:
            return self._wait(direction, "the ClientHello")
        hello = self.server_hello
        assert hello is not None
        side = self._sides[direction]
        side.epoch = TRAFFIC_KEYS
        suite = SUITES.get(hello.cipher_suite)
        master_secret = self._secret(CLIENT_RANDOM)
        if suite is None or suite.version != TLS12 or hello.version != TLS12:
            self._stop(direction, UNSUPPORTED_SUITE,
                       f"{version_name(hello.version)} with {suite_name(hello.cipher_suite)}")
        elif master_secret is None:
            self._stop(direction, NO_KEY, "the key log has no CLIENT_RANDOM line for this connection")
        else:
            if self._key_block is None:
                self._key_block = key_block(suite, master_secret, self.client_hello.random, hello.random)
            key, iv = self._key_block[direction]
            side.decrypter = Tls12Decrypter(suite, key, iv)
        return TLS_OVERHEAD

    def _open_tls12(self, direction: int, record: Record, plaintext: Output) -> str:
        decrypter = self._sides[direction].decrypter
        assert isinstance(decrypter, Tls12Decrypter)
        try:
            content = decrypter.open(record)
        except InvalidTag:
            decrypter.skip()
            return BAD_RECORD
        content_type = record.content_type
        if content_type == APPLICATION_DATA:
            return self._deliver(direction, content, plaintext)
        if content_type == HANDSHAKE:
            return self._handshake(direction, content)  # Finished; renegotiation hellos are read but not followed
        if content_type == ALERT:
            self._alert(direction, content, encrypted=True)
        elif content_type == CHANGE_CIPHER_SPEC:
            self._stop(direction, RENEGOTIATION, "a second ChangeCipherSpec switches to keys not followed here")
        return TLS_OVERHEAD

    def _deliver(self, direction: int, content: bytes, plaintext: Output) -> str:
        if content:
            plaintext.append((direction, content))
            self._sides[direction].stats.plaintext += len(content)
        return DECRYPTED
