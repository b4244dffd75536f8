import { Body, Controller, Get, Param, Post, Res } from '@nestjs/common';
import { Serialized, SerializedLock, type Lock } from 'nestjs-serialized';
import { CreateResourceDto } from './create-resource.dto';
import { ResourcesService, type CreateResult } from './resources.service';

type StatusResponse = { status(code: number): unknown };

/**
 * Resource creation, serialized per user: a double click creates one resource. 201
 * when created, 200 when it existed. The write is fenced with the lock's token.
 */
@Controller('users/:userId/resources')
export class ResourcesController {
  constructor(private readonly resources: ResourcesService) {}

  @Post()
  @Serialized('userId')
  async create(
    @Param('userId') userId: string,
    @Body() body: CreateResourceDto,
    @Res({ passthrough: true }) res: StatusResponse,
    @SerializedLock() lock: Lock,
  ): Promise<CreateResult> {
    const result = await this.resources.createIfAbsent(userId, body.name, lock.fencingToken);
    res.status(result.created ? 201 : 200);
    return result;
  }

  @Get()
  list(@Param('userId') userId: string) {
    return this.resources.list(userId);
  }
}

/** The same handler without `@Serialized`, to see the duplicates. */
@Controller('naive/users/:userId/resources')
export class NaiveResourcesController {
  constructor(private readonly resources: ResourcesService) {}

  @Post()
  async create(
    @Param('userId') userId: string,
    @Body() body: CreateResourceDto,
    @Res({ passthrough: true }) res: StatusResponse,
  ): Promise<CreateResult> {
    const result = await this.resources.createIfAbsent(userId, body.name);
    res.status(result.created ? 201 : 200);
    return result;
  }
}
