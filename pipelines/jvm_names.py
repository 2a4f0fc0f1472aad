"""The JVM classes and static methods PySpark names through py4j, asked for once per process instead of at every use.

PySpark builds each column expression by name: `F.col("x")` looks up the class `functions` in the JVM, then its
method `col`, then calls it; a list of columns looks up `PythonUtils` and `toSeq`. py4j answers each lookup with a
round trip, and the JVM resolves a short name against every import PySpark made (`java.lang.*` first), so most are
failed class loads over every jar on the class path first. A report of the bundled sample made 16,000 of them (of
49,600 calls to the JVM; 68 lookups and 33,400 calls now), and `Class.forName` was a tenth of the JVM's sampled CPU
(Java Flight Recorder). What a name resolves to cannot change while the JVM lives (PySpark makes its imports as it
starts the gateway, and kafkatap makes none), so the answers are kept on py4j's own objects, as attributes Python
then finds without asking: classes under the gateway's view, static methods and nested classes under their class.
Not kept: field values (a static field can change), failed lookups, and packages (py4j calls any name that is not a
class a package, and a jar added later can make it one).

py4j has no setting for this, so the gateway's view object gets subclasses of py4j's own classes
(`remember_names`); nothing else in the process changes.
"""

from __future__ import annotations

from py4j.java_gateway import JavaClass, JavaMember, JVMView


def _keep(owner: object, name: str, found: object) -> object:
    """Keep `found` on `owner` as `name` when it is a class (itself made to keep its members) or a static method: the
    next lookup of `name` is an attribute."""
    if type(found) is JavaClass:
        found.__class__ = _Class
    if isinstance(found, (JavaClass, JavaMember)):
        owner.__dict__[name] = found
    return found


class _Class(JavaClass):
    def __getattr__(self, name: str) -> object:
        return _keep(self, name, super().__getattr__(name))


class _View(JVMView):
    def __getattr__(self, name: str) -> object:
        return _keep(self, name, super().__getattr__(name))


def remember_names(jvm: JVMView) -> None:
    """Make `jvm` (a SparkContext's `_jvm`, the gateway's view that PySpark's functions use) keep what its names
    resolve to."""
    if type(jvm) is JVMView:
        jvm.__class__ = _View
