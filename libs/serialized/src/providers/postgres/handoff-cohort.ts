import type { HandOffMode } from '../../acquire-options.interface';

/** The run of local holders one server grant started: shared by every holder of that run. */
export interface Cohort {
  /** How the run's current holder passes the key on at release (see `HandOffMode`). */
  readonly mode: HandOffMode;
}
