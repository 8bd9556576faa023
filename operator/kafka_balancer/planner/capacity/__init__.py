"""The capacity wing: every broker under its limits. The precheck refuses what cannot fit at all
(:mod:`.precheck`); the entry point (:mod:`.repair`) runs the one-way rounds (:mod:`.one_way`), then
climbs the ladder (:mod:`.ladder`), one module per rung (:mod:`.descent`, :mod:`.make_room`,
:mod:`.search`, :mod:`.solver`, :mod:`.leadership_room`), over the shared round state and rooms
(:mod:`.repair_round`, :mod:`.room`)."""
