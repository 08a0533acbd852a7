import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { peerPoints, withPeers, type PeerSay, type Score } from '../../src/domain/intelligence/scores.ts';

/**
 * Peer evidence in scores (docs/scoring.md, "Peers"): local ⊕ peers as 100 × (1 − (1 − local/100)
 * × Π(1 − trust × confidence / 100)), held to the bounds the docs promise.
 */
const local = fc.record({ score: fc.integer({ min: 0, max: 100 }), reasons: fc.constant(['local']) }) as fc.Arbitrary<Score>;
const say = fc.record({ peer: fc.constantFrom('a', 'b', 'c', 'd'), trust: fc.double({ min: 0, max: 1, noNaN: true }), confidence: fc.integer({ min: 0, max: 100 }) });
const says = fc.array(say, { maxLength: 6 });

describe('peer evidence in scores', () => {
  it('never lowers a score, stays an integer from 0 to 100, and adds at most each peer’s points', () => {
    fc.assert(
      fc.property(local, says, (l, peers) => {
        const { score, peerScore } = withPeers(l, peers);
        expect(Number.isInteger(score) && score >= 0 && score <= 100).toBe(true);
        expect(Number.isInteger(peerScore) && peerScore >= 0 && peerScore <= 100).toBe(true);
        expect(score).toBeGreaterThanOrEqual(l.score);
        // Rounding aside (half a point), a peer adds no more than its trust × confidence.
        expect(score).toBeLessThanOrEqual(Math.min(100, l.score + peers.reduce((n, p) => n + peerPoints(p), 0) + 0.5));
      }),
      { numRuns: 1000 },
    );
  });

  it('lets one peer alone bring an unseen value no further than its trust × 100', () => {
    fc.assert(
      fc.property(say, (p) => {
        const { score } = withPeers({ score: 0, reasons: [] }, [p]);
        expect(score).toBeLessThanOrEqual(Math.round(p.trust * 100));
        expect(score).toBe(Math.round(peerPoints(p)));
      }),
      { numRuns: 500 },
    );
  });

  it('changes nothing for a peer trusted 0 or saying 0, or for no peer at all', () => {
    fc.assert(
      fc.property(local, say, (l, p) => {
        expect(withPeers(l, []).score).toBe(l.score);
        expect(withPeers(l, [{ ...p, trust: 0 }]).score).toBe(l.score);
        expect(withPeers(l, [{ ...p, confidence: 0 }]).score).toBe(l.score);
      }),
    );
  });

  it('grows with trust and with confidence, and does not depend on the peers’ order', () => {
    fc.assert(
      fc.property(local, says, say, fc.double({ min: 0, max: 1, noNaN: true }), (l, others, p, more) => {
        const trusted: PeerSay = { ...p, trust: Math.min(1, p.trust + more) };
        const surer: PeerSay = { ...p, confidence: Math.min(100, p.confidence + Math.round(more * 100)) };
        const base = withPeers(l, [...others, p]).score;
        expect(withPeers(l, [...others, trusted]).score).toBeGreaterThanOrEqual(base);
        expect(withPeers(l, [...others, surer]).score).toBeGreaterThanOrEqual(base);
        expect(withPeers(l, [p, ...others].reverse()).score).toBe(base);
      }),
      { numRuns: 500 },
    );
  });

  it('names each peer in the reasons after the local ones, with what it said and how far it is trusted', () => {
    const mixed = withPeers({ score: 40, reasons: ['called from 2 distinct source addresses'] }, [{ peer: 'carrier-b', trust: 0.5, confidence: 80 }]);
    // 100 × (1 − 0.6 × 0.6) = 64.
    expect(mixed).toEqual({ score: 64, peerScore: 40, reasons: ['called from 2 distinct source addresses', 'peer carrier-b says 80 (trusted 50%): 40 points'] });
  });
});
