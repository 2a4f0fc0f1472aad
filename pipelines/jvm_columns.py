"""A column by name and a literal made once per JVM: `F.col("x")` and `F.lit(0)` answered without a round trip after
the first.

Spark's Column is an immutable expression, so one Java Column for a name can stand in every plan that names it. PySpark
asks the JVM for a new one at every `F.col`, every column passed by name and every `F.lit`: 4,372 and 1,046 of the
16,396 calls a report of the bundled sample made with lists and releases batched (`gateway_objects`), over 651 names
and a few hundred values. The static methods
`functions.col` and `functions.lit` of the session's gateway view (`jvm_names` keeps them) answer from what they
made before, for arguments of plain Python values (a literal's key holds its type: `lit(1)` and `lit(True)` differ;
floats are asked for each time).
"""

from __future__ import annotations

from py4j.java_gateway import JavaMember, JavaObject, JVMView

CLASS_NAMES = ("functions", "org.apache.spark.sql.functions")
MADE = ("col", "lit")
PLAIN = (str, int, bool, type(None))  # no float: 0.0 == -0.0, and a NaN equals nothing
KEPT_MAX = 20_000  # columns kept per method: a few hundred in a report; the bound is for a session that makes more


class _Once:
    """A static method whose answer for the same plain arguments is the Java object it gave the first time."""

    def __init__(self, member: JavaMember) -> None:
        self._member = member
        self._made: dict[tuple, JavaObject] = {}

    def __call__(self, *args: object) -> JavaObject:
        if any(type(arg) not in PLAIN for arg in args):
            return self._member(*args)
        key = tuple((type(arg), arg) for arg in args)
        made = self._made.get(key)
        if made is None:
            made = self._member(*args)
            if len(self._made) < KEPT_MAX:
                self._made[key] = made
        return made


def make_once(jvm: JVMView) -> None:
    """Make the view's `functions.col` and `functions.lit` answer each plain argument once (after
    `jvm_names.remember_names`, which keeps the class and its methods on the view). PySpark names the class two ways,
    `functions` for a column by name and its full name for `F.col` and `F.lit`: each is a class object of its own
    there, and both share what they made."""
    classes = [getattr(jvm, name) for name in CLASS_NAMES]
    if any(found is not getattr(jvm, name) for found, name in zip(classes, CLASS_NAMES)):
        return  # a view that does not keep its classes: nothing to keep the methods on
    for name in MADE:
        member = getattr(classes[0], name)
        if isinstance(member, JavaMember):
            once = _Once(member)
            for found in classes:
                found.__dict__[name] = once
