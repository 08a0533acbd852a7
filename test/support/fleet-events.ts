import { sampleEvent } from './harness.ts';

type Json = Record<string, any>;

/** An event time in the node's form. */
export const nodeTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** Two honeypot nodes of a fleet. */
export const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'];

/** Six INVITEs to a number from three sources (`${sources}.0`–`.2`) and two nodes around `at`: a score of 54, over the TAXII threshold of 50. */
export function probes(number: string, sources: string, at: number): Json[] {
  return Array.from({ length: 6 }, (_, j) =>
    sampleEvent({ called_number: number, source_ip: `${sources}.${j % 3}`, sip_method: 'INVITE', created_by_node_id: NODES[j % 2], event_timestamp: nodeTime(at + j) }),
  );
}

/** One address dialling 30 numbers (`${prefix}0000`…) once each: a scanner, whose address scores and none of whose numbers does. */
export function scanner(address: string, prefix: string, at: number): Json[] {
  return Array.from({ length: 30 }, (_, j) =>
    sampleEvent({ called_number: `${prefix}${String(j).padStart(4, '0')}`, source_ip: address, sip_method: 'INVITE', created_by_node_id: NODES[j % 2], event_timestamp: nodeTime(at + j) }),
  );
}
