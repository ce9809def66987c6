// CartPole with drla_core/envs/cartpole.py's equations (Gymnasium CartPole-v1): the same constants, the
// same explicit Euler step in float64, observations rounded to float32. Checked against Python's
// trajectories by web/test/cartpole.test.js.
export class CartPole {
  constructor(maxEpisodeSteps = 500) {
    this.gravity = 9.8;
    this.masscart = 1.0;
    this.masspole = 0.1;
    this.totalMass = this.masspole + this.masscart;
    this.length = 0.5; // half the pole's length
    this.polemassLength = this.masspole * this.length;
    this.forceMag = 10.0;
    this.tau = 0.02;
    this.thetaThresholdRadians = 12 * 2 * Math.PI / 360;
    this.xThreshold = 2.4;
    this.maxEpisodeSteps = maxEpisodeSteps;
    this.state = null;
    this.elapsedSteps = 0;
  }

  /** Start from `state` ([x, x_dot, theta, theta_dot]) or uniform in (-0.05, 0.05) from `random`. */
  reset(state = null, random = Math.random) {
    this.state = state ? state.slice() : [0, 0, 0, 0].map(() => -0.05 + 0.1 * random());
    this.elapsedSteps = 0;
    return Float32Array.from(this.state);
  }

  /** One step: {obs, reward, terminated, truncated}, as CartPole.step in Python. */
  step(action) {
    if (this.state === null) throw new Error("CartPole: call reset() before step()");
    if (action !== 0 && action !== 1) throw new RangeError(`CartPole: action must be 0 or 1, got ${action}`);
    let [x, xDot, theta, thetaDot] = this.state;
    const force = action === 1 ? this.forceMag : -this.forceMag;
    const costheta = Math.cos(theta);
    const sintheta = Math.sin(theta);
    const temp = (force + this.polemassLength * thetaDot ** 2 * sintheta) / this.totalMass;
    const thetaacc = (this.gravity * sintheta - costheta * temp) / (
      this.length * (4.0 / 3.0 - this.masspole * costheta ** 2 / this.totalMass));
    const xacc = temp - this.polemassLength * thetaacc * costheta / this.totalMass;
    x = x + this.tau * xDot;
    xDot = xDot + this.tau * xacc;
    theta = theta + this.tau * thetaDot;
    thetaDot = thetaDot + this.tau * thetaacc;
    this.state = [x, xDot, theta, thetaDot];
    this.elapsedSteps += 1;
    const terminated = x < -this.xThreshold || x > this.xThreshold || theta < -this.thetaThresholdRadians
      || theta > this.thetaThresholdRadians;
    return { obs: Float32Array.from(this.state), reward: 1.0, terminated,
      truncated: this.elapsedSteps >= this.maxEpisodeSteps };
  }
}
