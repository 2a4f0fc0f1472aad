"""Topic ids to names, learned from the capture itself (Metadata, CreateTopics, ... responses name both).

Fetch v13+, Produce v13+ and the share apis name topics by id only. A row written before the Metadata response that
names its id carries the id; the ids so written are remembered per table, for `tables.topic_rewrite` to name them at
the end of the run. Ids never named in the capture stay ids.
"""

from __future__ import annotations


class TopicNames:
    __slots__ = ("names", "unresolved")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.unresolved: dict[str, set[str]] = {}  # table -> ids written without a name

    def learn(self, topic_id: str, name: str) -> None:
        self.names[topic_id] = name

    def resolve(self, topic_id: str, table: str) -> str:
        """The topic's name if known, else its id (remembered, so the table can be fixed at the end)."""
        name = self.names.get(topic_id)
        if name is not None:
            return name
        self.unresolved.setdefault(table, set()).add(topic_id)
        return topic_id
