"""What one reconciliation of a BalancePolicy decides: the next status and the actions to take. Pure.

:func:`~.next_status.next_status` takes the spec, the status the reconciliation started from and
what the reconciler has observed so far (:class:`~.seen.Seen`), and returns the next status and the
actions (:mod:`.actions`). When it needs one more observation (the cluster, the load, the imbalance,
a proposal, an execution started or resumed), the last action asks for it (:class:`~.actions.Ask`);
the reconciler makes it, adds it to what it saw and asks again. So a reconciliation reads only what
its decisions need, in the order they need it (one whose execution is still running reads no
cluster), and every decision is made here, from values: the reconciler gathers inputs and carries
out actions.

Each situation a policy can be in has its function, tried in order
(:data:`~.next_status.SITUATIONS`), as the Strimzi operator's computeNextStatus has one per state:
refused, executing, an execution finished (:mod:`.running`), the cluster read, resuming an
execution (:mod:`.running`), analysing the load, proposing, pending (:mod:`.planning`), and deciding
whether the proposal executes (:mod:`.deciding`). A situation works on a :class:`~.draft.Draft`.
"""
