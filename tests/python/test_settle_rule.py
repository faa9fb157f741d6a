"""shoal.SettleRule through the bindings, over the table the C++ test reads (tests/session/settle_table.txt):
Python's Elastic and C++'s ElasticLoop settle state by one rule, so both languages must reach every row's
decision. No torch, no processes: a fraction of a second."""
import os

import pytest

import shoal

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "session", "settle_table.txt")


def facts_of(text):
    f = shoal.SettleFacts()
    for w in text.split():
        if w == "holds":
            f.holds_state = True
        elif w == "lost":
            f.kept_peers = False
        elif w == "restore":
            f.can_restore = True
        elif w == "after_loss":
            f.restore_after_loss = True
        elif w.startswith("step="):
            f.next_step = int(w[5:])
        elif w.startswith("digest="):
            f.digest = int(w[7:])
        else:
            assert w == "fresh", "unknown fact word: %s" % w
    return f


def decision_of(text):
    want = {"restore": False, "anyone_holds_state": False, "lost_peers": False, "next_step": 0, "source_rank": 0,
            "hand_out": False}
    names = {"restore": "restore", "anyone": "anyone_holds_state", "lost": "lost_peers", "hand_out": "hand_out"}
    for w in text.split():
        if w in names:
            want[names[w]] = True
        elif w.startswith("next="):
            want["next_step"] = int(w[5:])
        elif w.startswith("source="):
            want["source_rank"] = int(w[7:])
        else:
            raise AssertionError("unknown decision word: %s" % w)
    return want


def rows():
    with open(TABLE) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, facts, decision = line.split("|")
                yield pytest.param([facts_of(r) for r in facts.split(";")], decision_of(decision), id=name.strip())


@pytest.mark.parametrize("ranks,want", list(rows()))
def test_every_row_of_the_table_shared_with_cpp(ranks, want):
    got = shoal.SettleRule.decide(ranks)
    assert {k: getattr(got, k) for k in want} == want


def test_the_table_is_there():
    assert len(list(rows())) >= 15


def test_facts_out_of_range_are_refused_with_a_reason():
    with pytest.raises(shoal.Error, match="step counter"):
        shoal.SettleRule.decide([shoal.SettleFacts(holds_state=True, next_step=1 << 42)])
    with pytest.raises(shoal.Error, match="no rank"):
        shoal.SettleRule.decide([])
