"""The sub-queries of a CASE / ratio query answered at the synopsis's bandwidths and at the bias term's.

:func:`parzen.aqp.ratios.approximate` answers each sub-query (:mod:`parzen.aqp.case_aggregates`) at
the synopsis's own bandwidths h, and :func:`parzen.aqp.ratios.bias_runs` answers it again at c h for c
in :data:`parzen.aqp.contract.BIAS_STEPS` (the smoothing bias's estimate).  A plain query does all
three in shared passes (:meth:`parzen.aqp.Engine.query`); :class:`SubqueryPasses` does the same per
sub-query:

- on the totals / grid / calibrated-sample path, the answer at h and the values at every c h come
  from one pass of the box integrals (:func:`parzen.aqp.answers.approximate_with_bias_runs`), kept
  until the bias runs ask for them;
- on the domain path (:mod:`parzen.aqp.domains`), the runs at every c h share the sub-query's domain
  selection (:func:`parzen.aqp.domains.domain_selection`, made once per query object), and a run whose
  ranges no kernel integrates is the one before it.

The floats are those of the separate passes (each bandwidth's box sums are bit for bit those of its
own pass), so the answers do not change.
"""

from __future__ import annotations

import pandas as pd

from . import answers, domains
from .contract import BIAS_STEPS, with_bandwidths_scaled
from .sql import AggregateQuery
from .strata import Layout
from .synopsis import Synopsis


class SubqueryPasses:
    """Answers the sub-queries of one CASE / ratio query on ``synopsis`` (see the module).

    Parameters
    ----------
    synopsis : Synopsis
        The synopsis that answers them.
    layout : Layout
        Its strata.
    with_bias : bool
        Whether the bias runs will be asked for (the answer has intervals): then the totals / grid /
        sample path computes them with the answer at the synopsis's bandwidths.
    """

    def __init__(self, synopsis: Synopsis, layout: Layout, with_bias: bool) -> None:
        self.synopsis, self.layout = synopsis, layout
        self.scaled = [with_bandwidths_scaled(synopsis, c) for c in BIAS_STEPS] if with_bias else []
        self._runs: dict[int, tuple[AggregateQuery, list]] = {}  # per sub-query (by id), its runs at ``scaled``

    def answer(self, query: AggregateQuery, synopsis: Synopsis,
               z: float | None) -> tuple[pd.DataFrame | answers.Row, str]:
        """The sub-query's answer from ``synopsis`` (intervals at ``z``; None: none) and its form: without
        GROUP BY or OR its :class:`parzen.aqp.answers.Row`, the floats that :func:`parzen.aqp.ratios.approximate`
        reads (no DataFrame is made to be read back), else its DataFrame.

        Parameters
        ----------
        query : AggregateQuery
            A sub-query, names as in the synopsis.
        synopsis : Synopsis
            The synopsis, or a copy with its bandwidths scaled.
        z : float or None
            The intervals' normal quantile.

        Returns
        -------
        answer : pandas.DataFrame or parzen.aqp.answers.Row
        form : str
        """
        one_row = not query.group_by and not query.boxes
        if domains.needed(query, synopsis):
            return domains.approximate_row(query, synopsis, self.layout, z) if one_row else \
                domains.approximate(query, synopsis, self.layout, z)
        if one_row:
            scaled = self.scaled if synopsis is self.synopsis and self.scaled else None
            row, form, runs = answers.approximate_row(query, synopsis, self.layout, z, scaled)
            if runs is not None:
                self._runs[id(query)] = (query, runs)
            return row, form
        if synopsis is self.synopsis and self.scaled:
            frame, form, runs = answers.approximate_with_bias_runs(query, synopsis, self.layout, z, self.scaled)
            self._runs[id(query)] = (query, runs)
            return frame, form
        return answers.approximate(query, synopsis, self.layout, z)

    def runs(self, query: AggregateQuery, synopses: list[Synopsis]) -> list:
        """The sub-query's values from each of ``synopses`` (copies of the synopsis with scaled
        bandwidths), as :func:`parzen.aqp.answers.bias_runs` / :func:`parzen.aqp.domains.bias_runs`
        give them.

        Parameters
        ----------
        query : AggregateQuery
            A sub-query, names as in the synopsis.
        synopses : list of Synopsis
            The synopsis with its bandwidths scaled.

        Returns
        -------
        list
            Per synopsis, per aggregate its values in the answer's row order (or the answer itself).
        """
        if domains.needed(query, synopses[0]):
            return domains.bias_runs(query, synopses, self.layout)
        kept = self._runs.get(id(query))
        if kept is not None and kept[0] is query and [id(s) for s in synopses] == [id(s) for s in self.scaled]:
            return kept[1]
        return answers.bias_runs(query, synopses, self.layout)
