/**
 * The model-check runner's reading of SPIN (scripts/model-check.js): a refuted variant
 * is told apart from a proof only by what it parses, so the parsing is checked on
 * SPIN's own output.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parsePanOutput, propertyAt } = require('../../scripts/model-check.js') as {
  parsePanOutput(output: string): { states?: number; errors?: number; violation?: string; depthLimit: boolean };
  propertyAt(source: string, trail: string): string | undefined;
};

const PROVED = `
(Spin Version 6.5.2 -- 6 December 2019)
	+ Partial Order Reduction
Full statespace search for:
	never claim         	- (none specified)
	assertion violations	+
	invalid end states	+
State-vector 132 byte, depth reached 237, errors: 0
  1264222 states, stored
  1803245 states, matched
`;

const REFUTED = `
pan:1: assertion violated (t>lastToken) (at depth 153)
pan: wrote postgres.pml.trail
State-vector 132 byte, depth reached 218, errors: 1
     3078 states, stored
`;

describe('model-check runner', () => {
  it('reads a proof: states, no error', () => {
    expect(parsePanOutput(PROVED)).toEqual({ states: 1264222, errors: 0, violation: undefined, depthLimit: false });
  });

  it('reads a refutation: the assertion that failed', () => {
    expect(parsePanOutput(REFUTED)).toEqual({ states: 3078, errors: 1, violation: 'assertion violated (t>lastToken)', depthLimit: false });
  });

  it('flags a search cut short by the depth bound (no proof)', () => {
    expect(parsePanOutput(`${PROVED}\nerror: max search depth too small\n`).depthLimit).toBe(true);
  });

  it('flags a search cut short by the memory bound (no proof)', () => {
    const cut = PROVED.replace('errors: 0', 'errors: 0\npan: reached -DMEMLIM bound\nWarning: Search not completed');
    expect(parsePanOutput(cut)).toMatchObject({ errors: 0, depthLimit: true });
  });

  it('reads a refutation as a verdict, though SPIN says the search stopped there', () => {
    expect(parsePanOutput(`${REFUTED}Warning: Search not completed\n`).depthLimit).toBe(false);
  });

  it('names the property by the comment on the failing assertion’s line', () => {
    const source = ['init {', '  assert(a);   /* P1 */', '  assert(b);   /* P2: tokens */', '  assert(false) }  /* INV */', '}'].join('\n');
    expect(propertyAt(source, 'spin: postgres.pml:3, Error: assertion violated')).toBe('P2');
    expect(propertyAt(source, 'spin: postgres.pml:4, Error: assertion violated')).toBe('INV');
    expect(propertyAt(source, 'spin: postgres.pml:1, Error: assertion violated')).toBeUndefined();
    expect(propertyAt(source, 'pan: invalid end state (at depth 9)')).toBe('P5');
  });

  it('names a property numbered past 9 in full (P10, not P1)', () => {
    const source = ['init {', '  assert(a)   /* P10: an untold writer is alone */', '  assert(b)   /* P1 */', '}'].join('\n');
    expect(propertyAt(source, 'spin: redis-holders.pml:2, Error: assertion violated')).toBe('P10');
    expect(propertyAt(source, 'spin: redis-holders.pml:3, Error: assertion violated')).toBe('P1');
  });
});
