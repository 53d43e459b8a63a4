import { SANDBOX_KEY_DIRECTORY, type DirectoryEntry, type InstantKeyType } from './sandbox-table.ts';

export type { DirectoryEntry, InstantKeyType };

/** The instant-key directory (rail `key_directory`, docs/accounts.md): who holds a key, at which bank. */
export interface KeyDirectoryPort {
  readonly name: string;
  /** The key's holder, or null when the directory does not know it. */
  lookup(key: { type: InstantKeyType; value: string }): Promise<DirectoryEntry | null>;
}

/** The sandbox directory: the sandbox table's fixed entries. */
export class SandboxKeyDirectory implements KeyDirectoryPort {
  readonly name = 'sandbox';
  async lookup(key: { type: InstantKeyType; value: string }): Promise<DirectoryEntry | null> {
    return SANDBOX_KEY_DIRECTORY.find((e) => e.key_type === key.type && e.key_value === key.value) ?? null;
  }
}
