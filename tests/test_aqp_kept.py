"""What ratio / CASE answers keep between queries (parzen.aqp._kept): made once within shared_terms, bounded."""

from types import SimpleNamespace

from parzen.aqp import _kept


def test_kept_values_are_made_once_within_shared_terms_and_bounded(monkeypatch):
    layout = SimpleNamespace(kept_terms={})
    made = []

    def make(tag):
        def run():
            made.append(tag)
            return [tag]
        return run

    first = _kept.kept(layout, "a", make("a"), lambda _: 1)  # outside: made, not kept
    assert _kept.kept(layout, "a", make("a"), lambda _: 1) is not first and made == ["a", "a"]
    assert not layout.kept_terms and not _kept.sharing()
    monkeypatch.setattr(_kept, "KEPT_MOST", 3)
    monkeypatch.setattr(_kept, "KEPT_ROWS", 10)
    with _kept.shared_terms():
        assert _kept.sharing()
        a = _kept.kept(layout, "a", make("a"), lambda _: 1)
        assert _kept.kept(layout, "a", make("a"), lambda _: 1) is a and made.count("a") == 3
        for tag in "bc":
            _kept.kept(layout, tag, make(tag), lambda _: 1)
        _kept.kept(layout, "a", make("a"), lambda _: 1)  # used: now the newest
        _kept.kept(layout, "d", make("d"), lambda _: 1)  # four: the least recently used (b) goes
        assert list(layout.kept_terms) == ["c", "a", "d"]
        _kept.kept(layout, "e", make("e"), lambda _: 10)  # rows beyond the bound: only the newest stays
        assert list(layout.kept_terms) == ["e"]
        _kept.kept(layout, "f", make("f"), lambda _: 20)  # the newest is kept whatever its size
        assert list(layout.kept_terms) == ["f"]
    assert not _kept.sharing()
