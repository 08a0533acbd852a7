import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';
import { migration as m001 } from './001-initial.ts';
import { migration as m002 } from './002-plans-and-audit.ts';
import { migration as m003 } from './003-event-number-written.ts';
import { migration as m004 } from './004-event-ids.ts';
import { migration as m005 } from './005-server-secrets.ts';
import { migration as m006 } from './006-ingest-urls.ts';
import { migration as m007 } from './007-audit-by-action.ts';
import { migration as m008 } from './008-event-read-limits.ts';
import { migration as m009 } from './009-signing-key-rotation.ts';
import { migration as m010 } from './010-aggregate-fold.ts';
import { migration as m011 } from './011-users-and-sessions.ts';
import { migration as m012 } from './012-integrations-and-outbox.ts';
import { migration as m013 } from './013-intelligence.ts';
import { migration as m014 } from './014-integration-health.ts';
import { migration as m015 } from './015-session-held-view.ts';
import { migration as m016 } from './016-node-names.ts';
import { migration as m017 } from './017-client-last-use.ts';
import { migration as m018 } from './018-aggregate-versions.ts';
import { migration as m019 } from './019-taxii-publication.ts';
import { migration as m020 } from './020-taxii-changes-in-key-order.ts';
import { migration as m021 } from './021-access-version.ts';
import { migration as m022 } from './022-shared-pairs-by-number.ts';
import { migration as m023 } from './023-taxii-first-pass-position.ts';
import { migration as m024 } from './024-shared-changes-log.ts';
import { migration as m025 } from './025-invitation-stand-ins.ts';
import { migration as m026 } from './026-call-guard-plan.ts';
import { migration as m027 } from './027-number-ranges.ts';
import { migration as m028 } from './028-allowlists.ts';
import { migration as m029 } from './029-value-reports.ts';
import { migration as m030 } from './030-federation-peers.ts';
import { migration as m031 } from './031-two-factor.ts';
import { migration as m032 } from './032-sign-up-and-contributors.ts';
import { migration as m033 } from './033-oidc-identities.ts';
import { migration as m034 } from './034-taxii-peer-position.ts';
import { migration as m035 } from './035-account-closing.ts';
import { migration as m036 } from './036-peer-written-through.ts';

/**
 * Every migration in order, by the name recorded in `kysely_migration`. Each file is frozen once
 * released: it imports nothing from outside this folder (test/store/migrations-frozen.test.ts),
 * so a later change to today's code cannot change what an old migration does.
 */
export function migrations(caps: MigrationCapabilities): Record<string, Migration> {
  return {
    '001_initial': m001(caps),
    '002_plans_and_audit': m002(caps),
    '003_event_number_written': m003(),
    '004_event_ids': m004(caps),
    '005_server_secrets': m005(),
    '006_ingest_urls': m006(),
    '007_audit_by_action': m007(),
    '008_event_read_limits': m008(),
    '009_signing_key_rotation': m009(),
    '010_aggregate_fold': m010(caps),
    '011_users_and_sessions': m011(),
    '012_integrations_and_outbox': m012(caps),
    '013_intelligence': m013(caps),
    '014_integration_health': m014(),
    '015_session_held_view': m015(),
    '016_node_names': m016(),
    '017_client_last_use': m017(),
    '018_aggregate_versions': m018(),
    '019_taxii_publication': m019(caps),
    '020_taxii_changes_in_key_order': m020(),
    '021_access_version': m021(caps),
    '022_shared_pairs_by_number': m022(),
    '023_taxii_first_pass_position': m023(),
    '024_shared_changes_log': m024(caps),
    '025_invitation_stand_ins': m025(),
    '026_call_guard_plan': m026(),
    '027_number_ranges': m027(caps),
    '028_allowlists': m028(caps),
    '029_value_reports': m029(caps),
    '030_federation_peers': m030(caps),
    '031_two_factor': m031(),
    '032_sign_up_and_contributors': m032(),
    '033_oidc_identities': m033(),
    '034_taxii_peer_position': m034(),
    '035_account_closing': m035(),
    '036_peer_written_through': m036(),
  };
}
