"""A ~200-line loss written the way people write one, for `bench.compile_time`.

A small simulation-and-fit model: helper functions, numpy, a few loops with branches,
early exits, tuples and a list of per-step values.  Nothing here is tuned to zygopy;
`bench.compile_time` times the first gradient of `loss` with an empty cache.
"""
import math

import numpy as np


def softplus(x):
    """log(1 + exp(x)) without overflow."""
    if x > 30.0:
        return x
    if x < -30.0:
        return math.exp(x)
    return math.log1p(math.exp(x))


def clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def huber(r, delta):
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r
    return delta * (a - 0.5 * delta)


def smooth_max(a, b, k):
    """A soft maximum of two numbers with sharpness k."""
    m = max(a, b)
    return m + math.log(math.exp(k * (a - m)) + math.exp(k * (b - m))) / k


def normalise(v):
    n = np.sqrt(np.sum(v * v)) + 1e-12
    return v / n


def layer(W, b, x, kind):
    z = W @ x + b
    if kind == "tanh":
        return np.tanh(z)
    elif kind == "relu":
        return np.maximum(z, 0.0)
    else:
        return z


def mlp(params, x):
    W1, b1, W2, b2, W3, b3 = params
    h = layer(W1, b1, x, "tanh")
    h = layer(W2, b2, h, "relu")
    return layer(W3, b3, h, "linear")


def drag(v, c):
    speed = math.sqrt(v[0] * v[0] + v[1] * v[1]) + 1e-9
    return -c * speed * v


def gravity(m):
    return np.array([0.0, -9.81 * m])


def spring(p, anchor, k, rest):
    d = p - anchor
    length = math.sqrt(d[0] * d[0] + d[1] * d[1]) + 1e-9
    stretch = length - rest
    return -k * stretch * d / length


def wall_bounce(p, v, restitution):
    """Reflect off the floor y = 0 and the walls x = -5, x = 5."""
    px, py = p[0], p[1]
    vx, vy = v[0], v[1]
    if py < 0.0:
        py = -py
        vy = -restitution * vy
    if px < -5.0:
        px = -10.0 - px
        vx = -restitution * vx
    elif px > 5.0:
        px = 10.0 - px
        vx = -restitution * vx
    return np.array([px, py]), np.array([vx, vy])


def step(p, v, theta, dt):
    mass, c, k, rest, restitution = theta
    force = gravity(mass) + drag(v, c) + spring(p, np.array([0.0, 3.0]), k, rest)
    a = force / mass
    v = v + dt * a
    p = p + dt * v
    p, v = wall_bounce(p, v, restitution)
    return p, v


def simulate(p0, v0, theta, steps, dt):
    p, v = p0, v0
    path = []
    energy = 0.0
    for t in range(steps):
        p, v = step(p, v, theta, dt)
        path.append(p)
        kinetic = 0.5 * theta[0] * (v[0] * v[0] + v[1] * v[1])
        potential = 9.81 * theta[0] * p[1]
        energy = energy + kinetic + potential
        if p[1] > 50.0:
            break
    return path, energy / steps


def trajectory_error(path, targets, delta):
    total = 0.0
    n = min(len(path), len(targets))
    for i in range(n):
        r = path[i] - targets[i]
        total += huber(r[0], delta) + huber(r[1], delta)
    return total / max(n, 1)


def controller_cost(params, states):
    cost = 0.0
    for i in range(states.shape[0]):
        u = mlp(params, states[i])
        u0 = clip(u[0], -2.0, 2.0)
        if u0 > 1.0:
            cost += 2.0 * (u0 - 1.0) ** 2
        elif u0 < -1.0:
            cost += 2.0 * (u0 + 1.0) ** 2
        else:
            cost += 0.1 * u0 * u0
    return cost / states.shape[0]


def regulariser(params, scale):
    total = 0.0
    for w in params:
        total += np.sum(w * w)
    return scale * total


def physical_prior(theta):
    mass, c, k, rest, restitution = theta
    penalty = 0.0
    penalty += softplus(0.1 - mass) * 10.0
    penalty += softplus(-c) * 10.0
    penalty += softplus(-k) * 10.0
    if restitution > 1.0:
        penalty += (restitution - 1.0) ** 2 * 100.0
    elif restitution < 0.0:
        penalty += restitution * restitution * 100.0
    penalty += (rest - 1.0) ** 2
    return penalty


def feature_loss(params, features, labels):
    n = features.shape[0]
    loss = 0.0
    correct = 0
    for i in range(n):
        out = mlp(params, features[i])
        score = out[0]
        y = labels[i]
        margin = y * score
        loss += softplus(-margin)
        if margin > 0.0:
            correct += 1
    return loss / n, correct


def schedule_weight(epoch, warmup):
    if epoch < warmup:
        return (epoch + 1) / warmup
    return 1.0


def loss(params, theta, p0, v0, targets, features, labels, states, epoch=3):
    """The objective: a trajectory fit, a classifier, a controller and priors."""
    path, energy = simulate(p0, v0, theta, 40, 0.02)
    fit = trajectory_error(path, targets, 0.5)
    cls, correct = feature_loss(params, features, labels)
    ctrl = controller_cost(params, states)
    reg = regulariser(params, 1e-3)
    prior = physical_prior(theta)
    w = schedule_weight(epoch, 5)
    total = fit + w * cls + 0.1 * ctrl + reg + prior
    total = total + 1e-4 * smooth_max(energy, 0.0, 4.0)
    if correct == features.shape[0]:
        total = total * 0.99
    direction = normalise(v0)
    total = total + 1e-3 * float(direction[0] * direction[1])
    return total


def inputs(seed=0):
    """Seeded arguments of `loss`: (params, theta, p0, v0, targets, features,
    labels, states)."""
    rs = np.random.RandomState(seed)
    params = (0.3 * rs.randn(8, 4), 0.1 * rs.randn(8), 0.3 * rs.randn(6, 8),
              0.1 * rs.randn(6), 0.3 * rs.randn(2, 6), 0.1 * rs.randn(2))
    theta = (1.2, 0.05, 4.0, 1.5, 0.8)
    p0, v0 = np.array([0.5, 2.0]), np.array([1.0, 0.5])
    targets = [np.array([0.5 + 0.02 * t, 2.0 - 0.01 * t]) for t in range(40)]
    features = rs.randn(12, 4)
    labels = np.sign(rs.randn(12))
    states = rs.randn(6, 4)
    return params, theta, p0, v0, targets, features, labels, states
