-- 010_history_indexes.sql - two indexes for the run history's lists and
-- series over large histories (measured in docs/performance.md, "History";
-- bench/history.py).
--
-- runs_state_time: with it SQLite (3.40) walks a label selector's runs in
-- id order within a state and stops at the LIMIT; with runs_state alone
-- (state, id: the rowid itself) it read and sorted every matching run
-- first, so GET /runs?label.model=X&state=succeeded&limit=50 and a
-- 10,000-point series grew with the number of matching runs (10,000
-- points of 51,000 matching runs: ~450 ms of SQL; now ~50 ms). It also
-- covers a series' created_at, so the wide runs rows are not read.
CREATE INDEX runs_state_time ON runs (state, id, created_at);

-- runs_name: sort=name reads the page in index order instead of reading
-- and sorting every run (~150 ms at 100,000 runs; now under 1 ms).
CREATE INDEX runs_name ON runs (name);
