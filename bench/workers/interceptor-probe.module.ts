import {
  Controller,
  Injectable,
  Module,
  Param,
  Post,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';

/** An interceptor that does nothing: what Nest's interceptor pipeline costs by itself. */
@Injectable()
class NoopInterceptor implements NestInterceptor {
  intercept(_ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

/**
 * The overhead probe's handler again, behind a no-op interceptor, so the HTTP
 * scenario can tell Nest's own interceptor cost (any interceptor pays it) from
 * what `@Serialized`'s interceptor adds on top.
 */
@Controller('bench-probe')
class InterceptorProbeController {
  @Post('intercepted/:id')
  @UseInterceptors(NoopInterceptor)
  intercepted(@Param('id') id: string) {
    return { id };
  }
}

@Module({ controllers: [InterceptorProbeController], providers: [NoopInterceptor] })
export class InterceptorProbeModule {}
