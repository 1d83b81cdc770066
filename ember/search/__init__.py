"""The search: structure candidates from an e-graph (egraph.py, rules.py), schedule knobs per kernel
(space.py, schedule.py), every candidate verified against the reference (oracle.py) before it is
timed, winners cached on disk (store.py). driver.py ties them together for em.compile(search=...)."""
