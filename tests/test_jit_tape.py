"""The native tape: compiled code pushes typed values, a reader pops them back in
reverse (many times), the buffer grows, reading past the start is an error."""
from __future__ import annotations

import pytest

import jit
from ssair.ir import IR, Branch, Goto, Return
from jit.types import FLOAT64, INT64, TupleT


def forward_ir() -> IR:
    """f(tape, x, n): r = 1.0; while n > 0: push(tape, (r, n)); r *= x; n -= 1; return r"""
    ir = IR("fwd")
    tape, x, n = ir.add_arg("tape"), ir.add_arg("x"), ir.add_arg("n")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Goto(b2.id)
    r = ir.add_phi(b2, {b1.id: 1.0})
    m = ir.add_phi(b2, {b1.id: n})
    c = ir.push(b2, "gt", m, 0)
    b2.term = Branch(c, b3.id, b4.id)
    pair = ir.push(b3, "tuple", r, m)
    ir.push(b3, "push", tape, pair)
    r2 = ir.push(b3, "mul", r, x)
    m2 = ir.push(b3, "sub", m, 1)
    b2.phis[0].incoming[b3.id] = r2
    b2.phis[1].incoming[b3.id] = m2
    b3.term = Goto(b2.id)
    b4.term = Return(r)
    return ir


def backward_ir(count: int) -> IR:
    """g(reader): pop `count` (r, n) pairs, return sum(r * n) and the last n."""
    ir = IR("bwd")
    reader = ir.add_arg("reader")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Goto(b2.id)
    k = ir.add_phi(b2, {b1.id: 0})
    acc = ir.add_phi(b2, {b1.id: 0.0})
    last = ir.add_phi(b2, {b1.id: -1})
    b2.term = Branch(ir.push(b2, "lt", k, count), b3.id, b4.id)
    pair = ir.push(b3, "pop", reader)
    ir.meta["pop_types"] = {pair.id: TupleT((FLOAT64, INT64))}
    r, n = ir.push(b3, "getitem", pair, 0), ir.push(b3, "getitem", pair, 1)
    acc2 = ir.push(b3, "add", acc, ir.push(b3, "mul", r, n))
    for phi, v in zip(b2.phis, (ir.push(b3, "add", k, 1), acc2, n)):
        phi.incoming[b3.id] = v
    b3.term = Goto(b2.id)
    b4.term = Return(ir.push(b4, "tuple", acc, last))
    return ir


def test_push_pop_roundtrip_and_growth():
    fwd, bwd = jit.jit(forward_ir()), jit.jit(backward_ir(100))
    tape = jit.NativeTape()
    r = 1.0
    for _ in range(100):
        r *= 1.01
    assert fwd(tape, 1.01, 100) == r
    assert len(tape) == 200                      # 100 pairs of two slots, grown past 64
    want = sum(1.01 ** i * (100 - i) for i in range(100))
    for _ in range(2):                           # a tape can be read many times
        total, last = bwd(tape.reader())
        assert abs(total - want) < 1e-9 * want
        assert last == 100                       # LIFO: the first push comes out last


def test_reading_past_the_start_raises():
    fwd, bwd = jit.jit(forward_ir()), jit.jit(backward_ir(3))
    tape = jit.NativeTape()
    fwd(tape, 2.0, 2)
    with pytest.raises(RuntimeError, match="past its start"):
        bwd(tape.reader())


def test_pop_without_recorded_type_is_a_typing_error():
    ir = backward_ir(1)
    ir.meta.pop("pop_types")
    with pytest.raises(jit.TypingError, match="pop_types"):
        jit.jit(ir)(jit.NativeTape().reader())


def pw(x, n):
    r = 1.0
    while n > 0:
        n -= 1
        r *= x
    return r


def compile_pow_pullback():
    """Compile the J transform of `pw` (forward records on a NativeTape, adjoint pops).

    The pop types come from the forward's typing through the adjoint's
    meta['pop_of'] (pop var -> the forward value its push recorded), which
    `jit.pullback.jcalls.adjoint_ir` turns into meta['pop_types']."""
    import lowering
    from adjoint.transform import transform
    from jit.pullback.jcalls import adjoint_ir
    from jit.typing.infer import infer
    from jit.types import READER, TAPE

    jf = transform(lowering.lower(pw), (True, False))
    ft = infer(jf.forward, (TAPE, FLOAT64, INT64))
    adj = adjoint_ir(jf, ft)
    pops = [s for b in adj.blocks for s in b.stmts if s.op == "pop"]
    assert pops and adj.meta["pop_types"]
    fwd, back = jit.jit(jf.forward), jit.jit(adj)
    tape = jit.NativeTape()
    _, env = fwd(tape, 2.0, 3)
    code = str(jit.code_typed(back, tape.reader(), env, 1.0))
    assert "pop(%1)::float64" in code and str(READER) in code
    return fwd, back


def test_compiled_forward_and_adjoint_of_pow():
    import adjoint
    fwd, back = compile_pow_pullback()
    for x, n in [(2.0, 3), (1.5, 0), (-0.5, 7)]:
        tape = jit.NativeTape()
        y, env = fwd(tape, x, n)
        assert y == pw(x, n)
        want = adjoint.pullback(pw, x, n, backend="interp")[1](1.0)
        for _ in range(2):
            g = back(tape.reader(), env, 1.0)
            assert g[0] == want[0] and g[1] is None
