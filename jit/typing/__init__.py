"""Type inference: the engine that specialises an IR on its argument types
(`infer`), the type rules of the IR's primitives (`primitives`), and the bookkeeping
for locals some path leaves unassigned (`unbound`)."""
