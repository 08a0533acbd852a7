// The package ships JavaScript only; these are the parts of its API Tollwatch uses.
declare module 'bloomfilter' {
  export class BloomFilter {
    constructor(bits: number, hashes: number);
    /** A filter sized for `expected` members at about `error` false positives. */
    static withTargetError(expected: number, error: number): BloomFilter;
    add(value: string): void;
    test(value: string): boolean;
  }
}
