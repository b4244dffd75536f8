/**
 * How a holder may pass its key to the next caller of its process (lock cohorting):
 * `cohort` serves up to `maxLocalHandOffs` callers of this process in a row even
 * while another process waits; `strict` hands off locally only while no other
 * session waits for the key in the server (checked at each release), still bounded
 * by `maxLocalHandOffs`.
 */
export type HandoffMode = 'strict' | 'cohort';

/** The run of local holders one server grant started: shared by every holder of that run. */
export interface Cohort {
  readonly mode: HandoffMode;
}
