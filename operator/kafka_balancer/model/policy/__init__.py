"""The custom resources' specs as typed models: BalancePolicy and ResourceGroup (kafkabalancer.io/v1alpha1).

Pure data. The same models parse what ``kubectl apply`` sends (the controller), a policy file given to
the CLI (the planner), and generate the CRDs' OpenAPI schemas (``kafka_balancer.controller.crdgen``),
so the three never drift apart. Field names are camelCase in YAML and snake_case in Python.

Validation that a structural schema can express (minimums, enums, patterns) lives in the field
declarations and ends up in the CRD; cross-field rules (an operation's required fields, a broker in
two groups) live in validators here and are reported by the controller as ``Stalled``.

One module a job: :mod:`.fields` the names and field types both specs share, :mod:`.balance_policy`
the BalancePolicy spec by section, :mod:`.resource_group` the ResourceGroup spec and its selectors,
:mod:`.parsing` whole objects, parsing and :class:`~.parsing.PolicyError`, :mod:`.groups` the brokers
a group holds and the check that no two groups of a policy claim one.
"""
