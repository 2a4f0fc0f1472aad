"""Fewer round trips to the JVM: a list of Java objects in one py4j call, and the objects Python dropped released in
batches.

py4j makes one round trip per call (about 105 µs on the 2-core machine, most of it waking the other side), and two of
its habits made most of a report's calls: a Python list goes to the JVM as a new ArrayList and one `add` per element
(PySpark passes every list of columns so), and each Java object Python drops is released by a call of its own, sent
by py4j's finalizer thread beside the job threads. A report of the bundled sample made 35,351 calls: 14,097 releases,
5,434 adds and 1,450 new lists. `GatewayObjects.java` takes a list, or a batch of releases, as the objects' ids in one
string. py4j has no setting for either, so its global input converters get one more (for lists of Java objects only)
and the session's client a subclass of its own class (`use`), as `jvm_names` does for names; a JVM without kafkatap's
JVM classes (spark-submit without the jar) runs as py4j does. Measured in docs/performance.md ("Lists and releases of
Java objects in one call").
"""

from __future__ import annotations

import logging

from py4j.clientserver import SHUTDOWN_FINALIZER_WORKER, JavaClient
from py4j.java_collections import ListConverter
from py4j.java_gateway import JavaClass, JavaObject
from py4j.protocol import ENTRY_POINT_OBJECT_ID, GATEWAY_SERVER_OBJECT_ID, register_input_converter
from pyspark import SparkContext

RELEASE_BATCH = 1000  # ids per release call: a bounded string (about 6 kB), however many objects a burst drops
_KEPT = {ENTRY_POINT_OBJECT_ID, GATEWAY_SERVER_OBJECT_ID}  # the gateway's own objects: py4j never releases them
log = logging.getLogger(__name__)


class _Client(JavaClient):
    """py4j's client, releasing the objects its finalizer thread finds queued together in one call."""

    _objects: JavaObject  # this JVM's GatewayObjects

    def garbage_collect_object(self, target_id: str, enqueue: bool = True) -> None:
        if enqueue:  # a JavaObject's finalizer, on any thread: queued for py4j's finalizer thread, as before
            super().garbage_collect_object(target_id, enqueue)
            return
        ids = [target_id]
        while len(ids) < RELEASE_BATCH:
            try:
                task = self.finalizer_deque.pop()
            except IndexError:
                break
            if task == SHUTDOWN_FINALIZER_WORKER or task[0] is not self:
                self.finalizer_deque.append(task)  # the worker's next task
                break
            ids.append(task[1])
        ids = [object_id for object_id in ids if object_id not in _KEPT]
        if ids and self.is_connected:
            try:
                self._objects.release(",".join(ids))
            except Exception:  # noqa: BLE001 - as py4j's own release: the finalizer thread must go on
                log.debug("releasing %d Java objects failed", len(ids), exc_info=True)


class _Lists(ListConverter):
    """A list or tuple of Java objects of a client with `GatewayObjects` as one call; any other list as py4j makes
    it."""

    def can_convert(self, object: object) -> bool:
        return type(object) in (list, tuple)

    def convert(self, object: list | tuple, gateway_client: JavaClient) -> JavaObject:
        if type(gateway_client) is _Client and object and all(
                type(element) is JavaObject and element._gateway_client is gateway_client for element in object):
            return gateway_client._objects.list(",".join(element._target_id for element in object))
        return super().convert(object, gateway_client)


register_input_converter(_Lists(), prepend=True)


def use(context: SparkContext) -> None:
    """Make the context's py4j client list and release Java objects through `GatewayObjects`, when its JVM has the
    class (kafkatap's JVM classes on its class path: a session started here)."""
    client = context._gateway._gateway_client
    found = context._jvm.kafkatap.GatewayObjects
    if type(client) is not JavaClient or not isinstance(found, JavaClass):
        return
    client._objects = found(JavaObject(GATEWAY_SERVER_OBJECT_ID, client))
    client.__class__ = _Client
