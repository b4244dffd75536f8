/** Options of `@OncePerTick(options?)` (docs/scheduling.md). */
export interface OncePerTickOptions {
  /**
   * What the tick record is kept under (default `<Class>.<method>`). Methods that
   * share a name share their ticks: each tick runs once among all of them, and never
   * while another of them still runs.
   */
  name?: string;
  /**
   * How far ahead of the backend's clock an instance's clock may be and still claim
   * a tick (default 1000 ms). A claim further ahead is refused with a warning, so a
   * clock that has run away cannot take future ticks from the instances whose
   * clocks are right. Clocks behind never cause a second run (docs/scheduling.md).
   */
  maxClockSkewMs?: number;
  /**
   * How long a run counts as running after its last renewal (default: the module's
   * `leaseMs`, 30 s). Renewed every third of it while the method runs, so it only
   * matters when an instance dies mid-run: the ticks within this long of its last
   * renewal are skipped, the next one runs on a survivor.
   */
  leaseMs?: number;
}

/** What `@OncePerTick` records on its method. */
export interface OncePerTickMetadata {
  readonly options: Readonly<OncePerTickOptions>;
  /** `Class#method`, for messages. */
  readonly handler: string;
  /** `options.name`, or `<Class>.<method>`. */
  readonly name: string;
}
