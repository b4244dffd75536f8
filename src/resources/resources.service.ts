import { randomUUID } from 'node:crypto';
import { ConflictException, Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { AppStore, type Resource } from '../store/app.store';

export interface CreateResult {
  created: boolean;
  resource: Resource;
  /** The fencing token the write was stored with (serialized handler only). */
  fencingToken?: string;
}

/**
 * "Create the resource if the user has none of that name": list, check, create.
 * Duplicate requests arriving together all see "none yet" and all create.
 * Given the fencing token of the lock its caller holds, the write is fenced: a
 * caller that lost its lock (paused past its lease) cannot write after the next
 * holder did — it gets a 409 instead.
 */
@Injectable()
export class ResourcesService {
  constructor(
    private readonly store: AppStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async createIfAbsent(userId: string, name: string, fence?: bigint): Promise<CreateResult> {
    const existing = (await this.store.listResources(userId)).find((r) => r.name === name);
    if (existing) return { created: false, resource: existing };
    await new Promise((resolve) => setTimeout(resolve, this.config.resourceTaskMs));
    const resource: Resource = { id: randomUUID(), userId, name, createdAt: Date.now() };
    if (!(await this.store.addResource(resource, fence))) {
      throw new ConflictException(`A newer holder of the lock of user ${userId} has written; this write was refused`);
    }
    return fence === undefined ? { created: true, resource } : { created: true, resource, fencingToken: fence.toString() };
  }

  list(userId: string): Promise<Resource[]> {
    return this.store.listResources(userId);
  }
}
